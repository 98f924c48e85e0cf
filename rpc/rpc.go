// Package rpc is the control plane's request/reply to an agent, with the
// rules users depend on: an enrolled agent that is not there answers 503
// (agent_offline or agent_reconnecting) at once or within its lease, never
// 404 and never a hang; only an agent that is online and slow answers 504.
// When it may give up on a request and what its errors say of delivery is
// the delivery rule (package delivery, wire/PROTOCOL.md "Delivery").
package rpc

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/delivery"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// DefaultTimeout bounds a call whose options and context give no deadline.
const DefaultTimeout = 30 * time.Second

// DefaultStartWindow is how long after a request is sent the agent may still
// start it; see Config.StartWindow.
const DefaultStartWindow = 5 * time.Second

// Config configures a Client.
type Config struct {
	// Conn is the control plane's connection to the agents (in the agents'
	// account). Required. Requests carry reply subjects under each agent's
	// own subjects (see subjects.Agent.Reply), so Conn needs publish and
	// subscribe on agent.> and nothing else.
	Conn *nats.Conn
	// Presence says whether an agent is online; calls to an agent whose
	// lease lapses while they wait answer 503. Required.
	Presence *presence.Tracker
	// Timeout is used when a call has no timeout of its own (DefaultTimeout).
	Timeout time.Duration
	// Poll is how often a waiting call checks presence (100 ms).
	Poll time.Duration
	// StartWindow is how long after sending a request the agent may still
	// start it (DefaultStartWindow); the request carries that start-by time.
	// A call whose agent lapses answers 503 no sooner, so an agent that was
	// frozen and wakes up with the request refuses it instead of running
	// what its caller was told did not reach it. It assumes the clocks of
	// the control plane and the agent agree within a second or so, as the
	// deadline does.
	StartWindow time.Duration
	// Protocol and OldestProtocol are the protocols this client speaks and
	// serves (wire.Version and wire.OldestVersion when Protocol is 0). A
	// request goes in the agent's protocol when it is older and served
	// (wire.SendVersion). Tests set them to play a newer control plane.
	Protocol, OldestProtocol int
}

// Client calls agents. It is safe for concurrent use.
type Client struct {
	cfg     Config
	replies *replies
}

// New returns a client subscribed to its replies; Close unsubscribes.
func New(cfg Config) (*Client, error) {
	if cfg.Conn == nil || cfg.Presence == nil {
		return nil, errors.New("rpc: Conn and Presence are required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Protocol <= 0 {
		cfg.Protocol, cfg.OldestProtocol = wire.Version, wire.OldestVersion
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 100 * time.Millisecond
	}
	if cfg.StartWindow <= 0 {
		cfg.StartWindow = DefaultStartWindow
	}
	r, err := newReplies(cfg.Conn)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, replies: r}, nil
}

// Close stops taking replies; calls still waiting end at their deadline.
func (c *Client) Close() error { return c.replies.close() }

// CallOptions are the per-call envelope fields and limits.
type CallOptions struct {
	// Session and Epoch fence calls made through a hot-swapped session.
	Session string
	Epoch   uint64
	// IdempotencyKey names a mutation so that the agent runs it once.
	IdempotencyKey string
	// Timeout bounds the call (the context's deadline wins when sooner).
	Timeout time.Duration
}

// Call runs op with body on ag and decodes the result into out (out may be
// nil). Errors are *wire.Error, from the agent or from the rules above;
// MaybeDelivered tells whether the agent may have run the request.
func (c *Client) Call(ctx context.Context, ag subjects.Agent, op string, body, out any, opts CallOptions) error {
	subj, err := ag.RPC()
	if err != nil {
		return wire.Errorf(wire.CodeInvalidArgument, "", "%v", err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = c.cfg.Timeout
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	req, err := wire.NewRequest(op, nil, deadline)
	if err != nil {
		return wire.Errorf(wire.CodeInvalidArgument, "", "%v", err)
	}
	req.Session, req.Epoch, req.IdempotencyKey = opts.Session, opts.Epoch, opts.IdempotencyKey
	req.Version = c.cfg.Protocol
	if h := c.cfg.Presence.Get(ag).Hello; h != nil {
		// An agent one protocol behind is spoken to in its own.
		req.Version = wire.SendVersion(h.Protocol, c.cfg.Protocol, c.cfg.OldestProtocol)
	}
	startBy := delivery.StartBy(time.Now(), deadline, c.cfg.StartWindow)
	req.StartBy = startBy.UnixMilli()
	data, err := wire.EncodeRequest(req, body)
	if err != nil {
		return wire.Errorf(wire.CodeInvalidArgument, "", "encode request: %v", err)
	}
	// A reply subject serves one request at a time, and again once its
	// request is answered (replies.go): a reply to an earlier request on
	// it, late or repeated, names another request and is not this one's.
	// One that names none is taken, but is not this request's own: the
	// subject rests, lest a repeat be taken by the next call on it.
	var resp *wire.Response
	var decodeErr error
	accept := func(m *nats.Msg) (take, own bool) {
		r, err := wire.DecodeResponse(m.Data)
		if err == nil && r.ID != req.ID && r.ID != "" {
			return false, false
		}
		resp, decodeErr = r, err
		return true, err == nil && r.ID == req.ID
	}
	if _, err := c.request(ctx, ag, subj, data, deadline, startBy, accept); err != nil {
		return err
	}
	if decodeErr != nil {
		return decodeErr
	}
	return resp.Into(out)
}

// request sends data and waits for the reply, watching presence: a lapse
// while waiting ends the wait with 503, once the request's start-by time
// has passed (delivery.GiveUp).
func (c *Client) request(ctx context.Context, ag subjects.Agent, subj string, data []byte, deadline, startBy time.Time, accept func(*nats.Msg) (take, own bool)) (*nats.Msg, error) {
	if max := c.cfg.Conn.MaxPayload(); max > 0 && int64(len(data)) > max {
		return nil, wire.Errorf(wire.CodePayloadTooLarge, "", "request of %d bytes exceeds the limit of %d", len(data), max)
	}
	first := c.cfg.Presence.Get(ag)
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	w := c.watch(rctx, ag, first, startBy, cancel)
	msg, err := c.replies.request(rctx, ag, subj, data, accept)
	w.stop()
	if err == nil {
		return msg, nil
	}
	if e := w.lapsed; e != nil {
		if e.Status == presence.Online {
			return nil, ambiguous(wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentReconnecting,
				"agent %s reconnected while the call was in flight; its reply cannot arrive (the call may have run)", ag))
		}
		return nil, ambiguous(unavailable(ag, *e, "stopped answering"))
	}
	if errors.Is(err, nats.ErrNoResponders) {
		c.cfg.Presence.Lapse(ag, first.Instance)
	}
	return nil, c.classify(ctx, ag, err)
}

// watch cancels the request when the delivery rule lets the caller give up
// on ag (delivery.GiveUp): its presence lapsed, or it said hello again on a
// new connection (the reply to a request delivered on the old one can no
// longer reach us: an agent may publish only replies to requests its own
// connection received), and the start-by time has passed. first is ag's
// presence when the call began. The watcher's stop ends it and waits for a
// check under way; after it, lapsed is the presence the watcher gave up on
// when it cancelled the request (nil when it did not).
func (c *Client) watch(ctx context.Context, ag subjects.Agent, first presence.Entry, startBy time.Time, cancel func()) *watcher {
	w := &watcher{c: c, ctx: ctx, ag: ag, firstHello: first.Hello, wasOnline: first.Status == presence.Online,
		start: time.Now(), startBy: startBy, cancel: cancel}
	w.mu.Lock()
	w.t = time.AfterFunc(c.cfg.Poll, w.check)
	w.mu.Unlock()
	return w
}

// watcher is one call's watch: a timer that runs the check and sets
// itself again, rather than a goroutine with a ticker. Every call has a
// watcher, most calls end before its first check, and the goroutine, its
// ticker and its two channels were a share of what a call allocated (so
// it keeps of the first presence only what the checks compare). mu makes
// stop wait for a check under way; a check after stop does nothing.
type watcher struct {
	c              *Client
	ctx            context.Context
	ag             subjects.Agent
	firstHello     *wire.Hello // the hello the call began with
	wasOnline      bool        // online when the call began
	start, startBy time.Time
	cancel         func()

	mu      sync.Mutex
	stopped bool
	t       *time.Timer
	// lapsed is set once, by the check that gives up (read it after stop).
	lapsed *presence.Entry
}

func (w *watcher) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.ctx.Err() != nil {
		return
	}
	e := w.c.cfg.Presence.Get(w.ag)
	reconnected := e.Hello != nil && e.Hello != w.firstHello
	now := time.Now()
	if !delivery.GiveUp(delivery.Wait{
		WasOnline: w.wasOnline, Online: e.Status == presence.Online && !reconnected,
		Waited: now.Sub(w.start), MinLease: presence.DefaultMinLease, StartBy: w.startBy,
	}, now) {
		w.t.Reset(w.c.cfg.Poll)
		return
	}
	// A copy, so that e stays on the stack in the checks that go on
	// watching (most of them): each check runs on a goroutine of its own
	// (time.AfterFunc), and a goroutine's first allocation in a GC's mark
	// phase makes it owe at least 64 KiB of the marking.
	lapsed := e
	w.lapsed = &lapsed
	w.cancel()
}

func (w *watcher) stop() {
	w.mu.Lock()
	w.stopped = true
	w.t.Stop()
	w.mu.Unlock()
}

// classify turns a NATS request error into the error users see.
func (c *Client) classify(ctx context.Context, ag subjects.Agent, err error) error {
	e := c.cfg.Presence.Get(ag)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		// Nobody subscribed: the request reached no one, safe to retry.
		return unavailable(ag, e, "is not connected")
	case errors.Is(err, nats.ErrMaxPayload):
		return wire.Errorf(wire.CodePayloadTooLarge, "", "request exceeds the NATS max payload")
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return ambiguous(wire.Errorf(wire.CodeUnavailable, wire.ReasonCanceled, "call to agent %s canceled: %v", ag, context.Cause(ctx)))
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		if e.Status != presence.Online {
			return ambiguous(unavailable(ag, e, "did not answer"))
		}
		return ambiguous(wire.Errorf(wire.CodeDeadlineExceeded, "", "agent %s did not answer in time", ag))
	case errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionDraining) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected):
		return ambiguous(wire.Errorf(wire.CodeUnavailable, wire.ReasonNATSDisconnected, "control plane is not connected to NATS: %v", err))
	}
	return ambiguous(wire.Errorf(wire.CodeUnavailable, "", "call agent %s: %v", ag, err))
}

// unavailable is the 503 of an enrolled agent that is not there.
func unavailable(ag subjects.Agent, e presence.Entry, what string) *wire.Error {
	reason := wire.ReasonAgentOffline
	if e.Status == presence.Reconnecting {
		reason = wire.ReasonAgentReconnecting
	}
	seen := "never seen"
	if !e.LastSeen.IsZero() {
		seen = "last seen " + e.LastSeen.UTC().Format(time.RFC3339)
	}
	return wire.Errorf(wire.CodeUnavailable, reason, "agent %s %s (%s, %s)", ag, what, e.Status, seen)
}

// ambiguous marks err as one after which the agent may have run the
// request (delivery.Ambiguous).
func ambiguous(err *wire.Error) error { return delivery.Ambiguous(err) }

// MaybeDelivered reports whether err leaves open that the agent received
// the request (a timeout, a lapse while waiting, a lost connection); it is
// delivery.MaybeDelivered. Mutations must not be replayed when true.
func MaybeDelivered(err error) bool { return delivery.MaybeDelivered(err) }
