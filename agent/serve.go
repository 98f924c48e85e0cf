package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/delivery"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// stopGrace bounds how long a stopping agent waits for in-flight requests
// after canceling them.
const stopGrace = 5 * time.Second

// server is one Run's serving state.
type server struct {
	a    *Agent
	nc   *nats.Conn
	base context.Context // canceled when the agent stops

	mu       sync.Mutex
	stopping bool
	wg       sync.WaitGroup
}

// serve subscribes, says hello, beats, and serves until ctx ends or Run is
// asked to stop.
func (a *Agent) serve(ctx context.Context, nc *nats.Conn) error {
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &server{a: a, nc: nc, base: base}
	a.conn.Store(nc)
	rpcSubj, err := a.id.RPC()
	if err != nil {
		return err
	}
	a.pipes.start()
	defer a.pipes.close()
	defer a.attach.closeAll() // frames may be lost with the connection
	sub, err := nc.Subscribe(rpcSubj, s.onRequest)
	if err != nil {
		return fmt.Errorf("agent: subscribe %s: %w", rpcSubj, err)
	}
	a.publishHello(nc)
	if err := nc.Flush(); err != nil {
		a.log.Warn("flush hello", "err", err)
	} else if a.cfg.OnServing != nil {
		a.cfg.OnServing()
	}
	a.log.Info("agent serving", "agent", a.id.String(), "instance", a.instance, "root", a.cfg.Root)
	beatStop, beatDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(beatDone); a.heartbeat(nc, beatStop) }()
	stopLinks := a.watchLinks(nc)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-a.stopCh:
	}
	stopLinks()
	close(beatStop)
	<-beatDone
	_ = sub.Unsubscribe()
	if runErr == nil || errors.Is(runErr, ErrTakenOver) {
		a.publish(nc, subjects.KindGoodbye, &wire.Goodbye{Instance: a.instance})
		_ = nc.FlushTimeout(time.Second)
	}
	s.stop(cancel)
	a.log.Info("agent stopped", "agent", a.id.String(), "reason", stopReason(runErr))
	return runErr
}

func stopReason(err error) string {
	if err == nil {
		return "stopped"
	}
	return err.Error()
}

// stop refuses new requests, cancels in-flight ones and waits for them.
func (s *server) stop(cancel context.CancelFunc) {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	cancel()
	if !waitGrace(&s.wg) {
		s.a.log.Warn("in-flight requests did not finish after cancel")
	}
}

// waitGrace waits for wg for at most stopGrace: false when it gave up.
func waitGrace(wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// onRequest admits a request into the bounded worker pool, or answers busy.
func (s *server) onRequest(m *nats.Msg) {
	if m.Reply == "" {
		switch {
		case len(m.Data) == 0:
		case m.Data[0] == wire.PipeMagic:
			s.a.pipes.deliver(m.Data)
		case m.Data[0] == wire.AttachMagic:
			s.a.attach.deliver(m.Data)
		}
		return
	}
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		s.respond(m, wire.EncodeError(requestID(m.Data), wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentOffline, "agent is stopping")))
		return
	}
	select {
	case s.a.sem <- struct{}{}:
	default:
		s.mu.Unlock()
		s.respond(m, wire.EncodeError(requestID(m.Data), wire.Errorf(wire.CodeUnavailable, wire.ReasonBusy, "agent is serving %d requests; retry", cap(s.a.sem))))
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() { <-s.a.sem }()
		reply, release := s.a.handle(s.base, m.Data)
		s.respond(m, reply)
		if release != nil {
			release()
		}
	}()
}

// requestID digs the id out of a request for an early error reply.
func requestID(data []byte) string {
	if req, err := wire.DecodeRequest(data); req != nil && err == nil {
		return req.ID
	}
	return ""
}

// respond sends reply, or payload_too_large if it does not fit.
func (s *server) respond(m *nats.Msg, reply []byte) {
	if max := s.nc.MaxPayload(); max > 0 && int64(len(reply)) > max {
		reply = wire.EncodeError(requestID(m.Data), wire.Errorf(wire.CodePayloadTooLarge, "",
			"reply of %d bytes exceeds the NATS max payload of %d", len(reply), max))
	}
	if err := m.Respond(reply); err != nil {
		s.a.log.Warn("reply", "err", err)
	}
}

// handle decodes, checks and runs one request and returns the encoded
// reply, after appending it to the audit log. A reply encoded around a
// result's pooled buffer (wire.InPlace) comes with release, to call once it
// was sent.
func (a *Agent) handle(base context.Context, data []byte) (reply []byte, release func()) {
	req, err := wire.DecodeRequest(data)
	if err != nil {
		id := ""
		if req != nil {
			id = req.ID
		}
		return wire.EncodeError(id, err), nil
	}
	start := time.Now()
	call := a.inspect(req)
	reply, release, out := a.dispatch(base, req, call)
	a.record(req, call, start, out)
	return reply, release
}

// outcome is what the audit log records of a reply: its error, if any,
// and the bytes the call moved.
type outcome struct {
	err   *wire.Error
	bytes int64
}

// dispatch runs req: the pause switch, the delivery rule, the owner's
// policy, then its handler.
func (a *Agent) dispatch(base context.Context, req *wire.Request, call *callFields) ([]byte, func(), outcome) {
	fail := func(err error) ([]byte, func(), outcome) {
		we := wireError(err)
		return wire.EncodeError(req.ID, we), nil, outcome{err: we}
	}
	gen := a.inflight.gen.Load() // a pause or reload after this re-checks (run)
	if a.paused.Load() && req.Op != wire.OpProbe {
		return fail(pausedErr())
	}
	var stop func(error)
	if holdsFence(req.Op) {
		// A restore's writes end before a request at a newer epoch of
		// its session runs here: that request stops them (the handler's
		// context ends with conflict/superseded) and waits.
		held, cancel := context.WithCancelCause(base)
		defer cancel(nil)
		stop, base = func(err error) { cancel(&ended{err: err}) }, held
	}
	release, err := delivery.AdmitHeld(req, time.Now(), &a.fence, stop) // Admit when stop is nil
	if err != nil {
		return fail(err)
	}
	defer release()
	if req.Session != "" {
		a.pipes.fence(req.Session, req.Epoch) // the session moved on: its older pipes end
	}
	h := a.handler(req.Op)
	if h == nil {
		return fail(wire.Errorf(wire.CodeUnsupported, wire.ReasonUnknownOp, "this agent does not serve op %q", req.Op))
	}
	if err := a.checkPolicy(req, call); err != nil {
		return fail(err)
	}
	run := func() ([]byte, func(), outcome) {
		// The handler's context ends with the request's deadline, with the
		// agent, or when a pause or a policy reload ends it (live.go).
		live, end := context.WithCancelCause(base)
		defer end(nil)
		ctx, cancel := context.WithDeadline(live, req.DeadlineTime())
		defer cancel()
		defer a.inflight.add(liveTag{op: req.Op, call: call}, end)()
		if a.inflight.gen.Load() != gen {
			// A pause or reload began since the checks above and may have
			// missed this request: check again.
			if a.paused.Load() && req.Op != wire.OpProbe {
				return fail(pausedErr())
			}
			if err := a.checkPolicy(req, call); err != nil {
				return fail(err)
			}
		}
		res, release, err := h(ctx, req)
		if err != nil {
			var cut *ended
			if errors.As(context.Cause(live), &cut) {
				return fail(cut.err)
			}
			return fail(err)
		}
		res = a.filterResult(call, res)
		b, err := wire.EncodeResult(req.ID, res)
		if err != nil {
			if release != nil {
				release()
			}
			return fail(err)
		}
		return b, release, outcome{bytes: resultBytes(res)}
	}
	if req.IdempotencyKey != "" && wire.Mutates(req.Op) {
		// The reply is remembered: it must not alias a pooled buffer.
		var out outcome
		b := restamp(a.idem.do(req.Op+"\x00"+req.IdempotencyKey, func() []byte {
			b, release, o := run()
			out = o
			if release != nil {
				b = bytes.Clone(b)
				release()
			}
			return b
		}), req.ID)
		if resp, err := wire.DecodeResponse(b); err == nil && resp.Error != nil {
			out.err = resp.Error
			if resp.Error.Reason == wire.ReasonAgentPaused {
				// Cut by a pause: a retry after the resume runs it again.
				a.idem.forget(req.Op + "\x00" + req.IdempotencyKey)
			}
		}
		return b, nil, out
	}
	return run()
}

// restamp gives a remembered reply the id of the request it now answers.
func restamp(reply []byte, id string) []byte {
	resp, err := wire.DecodeResponse(reply)
	if err != nil || resp.ID == id {
		return reply
	}
	resp.ID = id
	b, err := wire.Marshal(resp)
	if err != nil {
		return reply
	}
	return b
}
