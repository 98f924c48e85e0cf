// Package agenttest is a mock responder: a fake Outpost agent on a real NATS
// connection, for testing programs that call agents (the control plane's
// routing, or yours) without running the real daemon.
//
// The mock serves agent.<ws>.<agent>.rpc with per-op handlers, says hello and
// heartbeats like an agent, and can be switched offline (nobody subscribed:
// callers see no responders), frozen (subscribed but silent, like a suspended
// laptop), slow, or failing. It records every request it saw.
//
// Handlers are keyed by the public operation: HandleExec, HandleReadFile and
// HandleWriteFile (whole files; the mock speaks the chunked transfer ops),
// and On for any other one-message op, typed. Package outposttest brings up
// a real control plane with the mock enrolled and online, in a few lines.
package agenttest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// HandlerFunc answers one request; the result becomes the reply, an error a
// *wire.Error reply, and ErrNoReply no reply at all.
type HandlerFunc func(req *wire.Request) (any, error)

// ErrNoReply, returned by a HandlerFunc, leaves the request unanswered, as
// an agent holding a long poll open does: the caller waits until its
// deadline, or until it sees the agent go away.
var ErrNoReply = errors.New("agenttest: no reply")

// Option configures a mock made by New.
type Option func(*Agent) error

// WithHello makes the mock say h, in its hellos and its capabilities
// answers, instead of its defaults (version "agenttest", this machine's OS
// and architecture, host "agenttest", capability exec). Fields of h left
// zero keep their defaults; Workspace, Agent and Instance are always the
// mock's own.
func WithHello(h wire.Hello) Option {
	return func(m *Agent) error {
		m.hello = h
		return nil
	}
}

// Agent is a mock agent. Its methods are safe for concurrent use.
type Agent struct {
	nc       *nats.Conn
	id       subjects.Agent
	instance string
	hello    wire.Hello // WithHello's fields

	mu       sync.Mutex
	sub      *nats.Subscription
	handlers map[string]HandlerFunc
	errs     map[string]*wire.Error
	delay    time.Duration
	frozen   bool
	requests []*wire.Request
	beatStop chan struct{}
	beatDone chan struct{}
	closed   bool
	replies  sync.WaitGroup // delayed answers in flight
}

// New starts a mock of ag on nc: subscribed (online), with hello published
// and handlers for ping and capabilities.
func New(nc *nats.Conn, ag subjects.Agent, opts ...Option) (*Agent, error) {
	if err := ag.Validate(); err != nil {
		return nil, err
	}
	m := &Agent{nc: nc, id: ag, instance: wire.NewID(), handlers: map[string]HandlerFunc{}, errs: map[string]*wire.Error{}}
	for _, opt := range opts {
		if err := opt(m); err != nil {
			return nil, err
		}
	}
	m.handlers[wire.OpPing] = func(*wire.Request) (any, error) {
		return &wire.PingResult{Instance: m.instance, Time: time.Now().UTC()}, nil
	}
	m.handlers[wire.OpCapabilities] = func(*wire.Request) (any, error) { h := m.Hello(); return &h, nil }
	if err := m.SetOnline(true); err != nil {
		return nil, err
	}
	return m, nil
}

// ID is the agent the mock stands for.
func (m *Agent) ID() subjects.Agent { return m.id }

// Instance is the mock's instance id, as in its hello and heartbeats.
func (m *Agent) Instance() string { return m.instance }

// Hello is what the mock says on coming online (see WithHello).
func (m *Agent) Hello() wire.Hello {
	h := m.hello
	caps := maps.Clone(h.Capabilities)
	if caps == nil {
		caps = map[string]bool{"exec": true}
	}
	started := h.StartedAt
	if started.IsZero() {
		started = time.Now().UTC()
	}
	return wire.Hello{
		Workspace: m.id.Workspace, Agent: m.id.ID, Instance: m.instance, PID: cmp.Or(h.PID, os.Getpid()),
		Version: cmp.Or(h.Version, "agenttest"), Protocol: cmp.Or(h.Protocol, wire.Version),
		OS: cmp.Or(h.OS, runtime.GOOS), Arch: cmp.Or(h.Arch, runtime.GOARCH),
		Hostname: cmp.Or(h.Hostname, "agenttest"), Root: h.Root, GitVersion: h.GitVersion,
		Capabilities: caps, StartedAt: started, HeartbeatMs: h.HeartbeatMs, Conn: h.Conn,
	}
}

// Handle serves op with h, replacing any earlier handler.
func (m *Agent) Handle(op string, h HandlerFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers[op] = h
}

// SetOnline subscribes (and says hello) or unsubscribes the mock. Offline,
// callers get NATS no-responders, as with a stopped agent; no goodbye is sent
// (use PublishGoodbye for a clean stop).
func (m *Agent) SetOnline(online bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("agenttest: closed")
	}
	if online == (m.sub != nil) {
		return nil
	}
	if !online {
		err := m.sub.Unsubscribe()
		m.sub = nil
		if err != nil {
			return err
		}
		return m.nc.Flush()
	}
	subj, err := m.id.RPC()
	if err != nil {
		return err
	}
	if m.sub, err = m.nc.Subscribe(subj, m.serve); err != nil {
		return fmt.Errorf("agenttest: subscribe: %w", err)
	}
	m.publishLocked(subjects.KindHello, m.Hello())
	return m.nc.Flush()
}

// SetFrozen makes the mock keep its subscription but never answer, like a
// suspended process: callers wait until their deadline.
func (m *Agent) SetFrozen(frozen bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.frozen = frozen
}

// SetDelay makes every answer wait d first.
func (m *Agent) SetDelay(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.delay = d
}

// SetError makes every request for op fail with err (nil clears it).
func (m *Agent) SetError(op string, err *wire.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		delete(m.errs, op)
		return
	}
	m.errs[op] = err
}

// Requests returns every request the mock saw, oldest first.
func (m *Agent) Requests() []*wire.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*wire.Request(nil), m.requests...)
}

// Count is how many requests for op the mock saw ("" counts all).
func (m *Agent) Count(op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.requests {
		if op == "" || r.Op == op {
			n++
		}
	}
	return n
}

// serve answers one request on its own goroutine, as the real agent does.
func (m *Agent) serve(msg *nats.Msg) {
	req, err := wire.DecodeRequest(msg.Data)
	if err != nil {
		_ = msg.Respond(wire.EncodeError("", err))
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	h, herr, delay, frozen := m.handlers[req.Op], m.errs[req.Op], m.delay, m.frozen
	m.mu.Unlock()
	if frozen {
		return
	}
	m.replies.Add(1)
	go func() {
		defer m.replies.Done()
		if delay > 0 {
			time.Sleep(delay)
		}
		if b := reply(req, h, herr); b != nil {
			_ = msg.Respond(b)
		}
	}()
}

// reply is the encoded answer to req; nil for none (ErrNoReply).
func reply(req *wire.Request, h HandlerFunc, herr *wire.Error) []byte {
	switch {
	case herr != nil:
		return wire.EncodeError(req.ID, herr)
	case h == nil:
		return wire.EncodeError(req.ID, wire.Errorf(wire.CodeUnsupported, wire.ReasonUnknownOp, "agenttest: no handler for %q", req.Op))
	}
	res, err := h(req)
	if errors.Is(err, ErrNoReply) {
		return nil
	}
	if err != nil {
		return wire.EncodeError(req.ID, err)
	}
	b, err := wire.EncodeResult(req.ID, res)
	if err != nil {
		return wire.EncodeError(req.ID, err)
	}
	return b
}

// StartHeartbeats publishes a heartbeat every interval until StopHeartbeats
// or Close, so a presence tracker sees the mock online.
func (m *Agent) StartHeartbeats(interval time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.beatStop != nil || m.closed {
		return
	}
	m.beatStop, m.beatDone = make(chan struct{}), make(chan struct{})
	go m.beat(interval, m.beatStop, m.beatDone)
}

func (m *Agent) beat(interval time.Duration, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	var seq uint64
	for {
		seq++
		m.mu.Lock()
		m.publishLocked(subjects.KindHeartbeat, &wire.Heartbeat{Instance: m.instance, Seq: seq, Time: time.Now().UTC(), IntervalMs: interval.Milliseconds()})
		m.mu.Unlock()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// StopHeartbeats stops the heartbeats, as a frozen or cut-off agent would.
func (m *Agent) StopHeartbeats() {
	m.mu.Lock()
	stop, done := m.beatStop, m.beatDone
	m.beatStop, m.beatDone = nil, nil
	m.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// PublishHello says hello again (as on a reconnect).
func (m *Agent) PublishHello() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.publishLocked(subjects.KindHello, m.Hello())
}

// PublishGoodbye says goodbye, as a cleanly stopping agent does.
func (m *Agent) PublishGoodbye() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.publishLocked(subjects.KindGoodbye, &wire.Goodbye{Instance: m.instance})
	_ = m.nc.Flush()
}

func (m *Agent) publishLocked(kind string, v any) {
	subj, err := m.id.Subject(kind)
	if err != nil {
		return
	}
	if b, err := wire.Marshal(v); err == nil {
		_ = m.nc.Publish(subj, b)
	}
}

// Close stops heartbeats, unsubscribes and waits for answers in flight. It
// does not close the connection.
func (m *Agent) Close() {
	m.StopHeartbeats()
	_ = m.SetOnline(false)
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.replies.Wait()
}

// WaitCount waits until the mock saw n requests for op, or ctx ends.
func (m *Agent) WaitCount(ctx context.Context, op string, n int) error {
	for m.Count(op) < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("agenttest: saw %d %q requests, waited for %d: %w", m.Count(op), op, n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
