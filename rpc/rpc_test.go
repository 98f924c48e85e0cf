package rpc_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/internal/natstest"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

var ag = subjects.Agent{Workspace: "w1", ID: "laptop"}

type fixture struct {
	nc *nats.Conn
	pr *presence.Tracker
	c  *rpc.Client
}

func setup(t *testing.T) *fixture {
	t.Helper()
	ns := natstest.Start(t)
	f := &fixture{
		nc: natstest.Connect(t, ns),
		pr: presence.New(presence.Config{MinLease: 100 * time.Millisecond}),
	}
	t.Cleanup(f.pr.Close)
	c, err := rpc.New(rpc.Config{Conn: f.nc, Presence: f.pr, Poll: 20 * time.Millisecond, StartWindow: startWindow})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	return f
}

// beat says the agent is alive with a 20 ms interval (lease 100 ms).
func (f *fixture) beat(t *testing.T) {
	b, _ := wire.Marshal(&wire.Heartbeat{Instance: "i1", IntervalMs: 20})
	if err := f.pr.Observe(ag, subjects.KindHeartbeat, b); err != nil {
		t.Fatal(err)
	}
}

// keepAlive beats until the test ends.
func (f *fixture) keepAlive(t *testing.T) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			f.beat(t)
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

// waitLapsed waits until the lease of the last beat has lapsed: the agent
// is reconnecting.
func (f *fixture) waitLapsed(t *testing.T) {
	t.Helper()
	if err := f.pr.WaitStatus(ctx(t), ag, presence.Reconnecting); err != nil {
		t.Fatal(err)
	}
}

// respond serves ag's rpc subject with h; h returning nil sends no reply.
func (f *fixture) respond(t *testing.T, h func(*wire.Request) []byte) {
	subj, _ := ag.RPC()
	sub, err := f.nc.Subscribe(subj, func(m *nats.Msg) {
		req, err := wire.DecodeRequest(m.Data)
		if err != nil {
			_ = m.Respond(wire.EncodeError("", err))
			return
		}
		if b := h(req); b != nil {
			_ = m.Respond(b)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = f.nc.Flush()
	t.Cleanup(func() { _ = sub.Unsubscribe() })
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func wantErr(t *testing.T, err error, code wire.Code, reason string, maybeDelivered bool) {
	t.Helper()
	we := wire.AsError(err)
	if we == nil || we.Code != code || we.Reason != reason {
		t.Fatalf("error %v, want %s/%s", err, code, reason)
	}
	if got := rpc.MaybeDelivered(err); got != maybeDelivered {
		t.Fatalf("MaybeDelivered(%v) = %v, want %v", err, got, maybeDelivered)
	}
}

func TestCallCarriesEnvelopeAndResult(t *testing.T) {
	f := setup(t)
	f.keepAlive(t)
	got := make(chan *wire.Request, 1)
	f.respond(t, func(r *wire.Request) []byte {
		got <- r
		b, _ := wire.EncodeResult(r.ID, &wire.PingResult{Instance: "i1"})
		return b
	})
	var res wire.PingResult
	start := time.Now()
	err := f.c.Call(ctx(t), ag, wire.OpPing, nil, &res, rpc.CallOptions{Session: "s1", Epoch: 7, IdempotencyKey: "k1", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Instance != "i1" {
		t.Fatalf("result %+v", res)
	}
	r := <-got
	if r.Op != wire.OpPing || r.Session != "s1" || r.Epoch != 7 || r.IdempotencyKey != "k1" {
		t.Fatalf("envelope %+v", r)
	}
	if dl := r.DeadlineTime(); dl.Before(start.Add(4*time.Second)) || dl.After(start.Add(6*time.Second)) {
		t.Fatalf("deadline %v is not start+5s (%v)", dl, start)
	}
}

func TestAgentErrorPassesThrough(t *testing.T) {
	f := setup(t)
	f.keepAlive(t)
	f.respond(t, func(r *wire.Request) []byte {
		return wire.EncodeError(r.ID, wire.Errorf(wire.CodeConflict, wire.ReasonFenced, "epoch 3 < 4"))
	})
	err := f.c.Call(ctx(t), ag, wire.OpExec, &wire.ExecRequest{Argv: []string{"true"}}, nil, rpc.CallOptions{})
	wantErr(t, err, wire.CodeConflict, wire.ReasonFenced, false)
}

func TestOfflineRules(t *testing.T) {
	tests := []struct {
		name     string
		presence func(*testing.T, *fixture)
		serve    bool // a responder that never answers
		timeout  time.Duration
		code     wire.Code
		reason   string
		maybe    bool
	}{
		{"never seen, nobody subscribed", func(*testing.T, *fixture) {}, false, 10 * time.Second, wire.CodeUnavailable, wire.ReasonAgentOffline, false},
		{"lapsed, nobody subscribed", func(t *testing.T, f *fixture) { f.beat(t); f.waitLapsed(t) }, false, 10 * time.Second, wire.CodeUnavailable, wire.ReasonAgentReconnecting, false},
		{"goodbye, nobody subscribed", func(t *testing.T, f *fixture) {
			f.beat(t)
			b, _ := wire.Marshal(&wire.Goodbye{Instance: "i1"})
			_ = f.pr.Observe(ag, subjects.KindGoodbye, b)
		}, false, 10 * time.Second, wire.CodeUnavailable, wire.ReasonAgentOffline, false},
		{"online, then silent while the call waits", func(t *testing.T, f *fixture) { f.beat(t) }, true, 10 * time.Second, wire.CodeUnavailable, wire.ReasonAgentReconnecting, true},
		{"online and slow", func(t *testing.T, f *fixture) { f.keepAlive(t) }, true, 300 * time.Millisecond, wire.CodeDeadlineExceeded, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			if tt.serve {
				f.respond(t, func(*wire.Request) []byte { return nil })
			}
			tt.presence(t, f)
			c := ctx(t)
			err := f.c.Call(c, ag, wire.OpPing, nil, nil, rpc.CallOptions{Timeout: tt.timeout})
			if c.Err() != nil {
				t.Fatalf("the call hung until the test's own deadline: %v", err)
			}
			wantErr(t, err, tt.code, tt.reason, tt.maybe)
		})
	}
}

func TestCanceledCallerIsNotOffline(t *testing.T) {
	f := setup(t)
	f.keepAlive(t)
	c, cancel := context.WithCancel(ctx(t))
	f.respond(t, func(*wire.Request) []byte { cancel(); return nil }) // the caller gives up once it is delivered
	err := f.c.Call(c, ag, wire.OpPing, nil, nil, rpc.CallOptions{Timeout: 10 * time.Second})
	we := wire.AsError(err)
	if we == nil || we.Reason == wire.ReasonAgentOffline || we.Code == wire.CodeNotFound || !rpc.MaybeDelivered(err) {
		t.Fatalf("canceled call: %v", err)
	}
}

func TestNewRequiresConnAndPresence(t *testing.T) {
	if _, err := rpc.New(rpc.Config{}); err == nil {
		t.Fatal("New without Conn and Presence succeeded")
	}
	if rpc.MaybeDelivered(errors.New("x")) || rpc.MaybeDelivered(nil) {
		t.Fatal("MaybeDelivered of a plain error")
	}
}

// startWindow is the fixture's rpc.Config.StartWindow.
const startWindow = 400 * time.Millisecond

// A call whose agent lapses answers 503 only once the request's start-by
// time has passed, after which the agent refuses it; a reply that comes
// before then is the answer.
func TestLapseWaitsForStartBy(t *testing.T) {
	t.Run("no reply", func(t *testing.T) {
		f := setup(t)
		sent := make(chan *wire.Request, 1)
		f.respond(t, func(req *wire.Request) []byte { sent <- req; return nil })
		f.beat(t)
		before := time.Now()
		err := f.c.Call(ctx(t), ag, wire.OpExec, nil, nil, rpc.CallOptions{Timeout: 10 * time.Second})
		wantErr(t, err, wire.CodeUnavailable, wire.ReasonAgentReconnecting, true)
		req := <-sent
		if min := before.Add(startWindow).UnixMilli(); req.StartBy < min || req.StartBy >= req.Deadline {
			t.Fatalf("start-by %d, want at least %d (sent + window) and before the deadline %d", req.StartBy, min, req.Deadline)
		}
		if now := time.Now().UnixMilli(); now <= req.StartBy {
			t.Fatalf("503 at %d, before the start-by time %d: the agent could still run it", now, req.StartBy)
		}
	})
	t.Run("reply inside the window", func(t *testing.T) {
		f := setup(t)
		lapse := ctx(t)
		f.respond(t, func(req *wire.Request) []byte {
			// Past the 100 ms lease, inside the window.
			if err := f.pr.WaitStatus(lapse, ag, presence.Reconnecting); err != nil {
				return wire.EncodeError(req.ID, err)
			}
			b, _ := wire.EncodeResult(req.ID, &wire.PingResult{Instance: "i1"})
			return b
		})
		f.beat(t)
		var res wire.PingResult
		if err := f.c.Call(ctx(t), ag, wire.OpPing, nil, &res, rpc.CallOptions{Timeout: 10 * time.Second}); err != nil || res.Instance != "i1" {
			t.Fatalf("a reply after the lapse, before the start-by time: %+v, %v; want the reply", res, err)
		}
	})
}

// An agent that says hello again (it reconnected) while a call waits can no
// longer reply to it: the call answers 503 agent_reconnecting, maybe
// delivered, once the start-by time has passed, not at its deadline, though
// the agent stays online throughout.
func TestReconnectEndsTheWait(t *testing.T) {
	f := setup(t)
	hello := func() {
		b, _ := wire.Marshal(&wire.Hello{Instance: "i1", HeartbeatMs: 20})
		if err := f.pr.Observe(ag, subjects.KindHello, b); err != nil {
			t.Error(err)
		}
	}
	hello()
	f.keepAlive(t)
	f.respond(t, func(*wire.Request) []byte {
		go hello() // the request is lost with the old connection; the agent is back
		return nil
	})
	before := time.Now()
	err := f.c.Call(ctx(t), ag, wire.OpExec, nil, nil, rpc.CallOptions{Timeout: 10 * time.Second})
	wantErr(t, err, wire.CodeUnavailable, wire.ReasonAgentReconnecting, true)
	if took := time.Since(before); took < startWindow || took > 5*time.Second {
		t.Fatalf("answered after %v, want after the %v start window and long before the 10 s deadline", took, startWindow)
	}
	if st := f.pr.Get(ag).Status; st != presence.Online {
		t.Fatalf("agent %s, want online throughout", st)
	}
}

// A reply carries the subject of the agent the request went to: the reply
// subject is under the agent's own subjects, and a reply published on the
// same token under another agent's subjects (what another agent could
// publish) is not taken for it.
func TestReplyComesOnlyFromTheCalledAgent(t *testing.T) {
	f := setup(t)
	f.keepAlive(t)
	other := subjects.Agent{Workspace: ag.Workspace, ID: "other"}
	own, _ := ag.Wildcard()
	replies := make(chan string, 1)
	sub, err := f.nc.Subscribe(mustRPC(t, ag), func(m *nats.Msg) {
		replies <- m.Reply
		// Another agent answers on the same owner and token.
		_, rest, _ := subjects.Parse(m.Reply)
		forged, _ := other.Subject(rest)
		b, _ := wire.EncodeResult("", &wire.PingResult{Instance: "forged"})
		_ = f.nc.Publish(forged, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	_ = f.nc.Flush()
	var res wire.PingResult
	err = f.c.Call(ctx(t), ag, wire.OpPing, nil, &res, rpc.CallOptions{Timeout: 500 * time.Millisecond})
	if we := wire.AsError(err); we == nil || we.Code != wire.CodeDeadlineExceeded {
		t.Fatalf("call answered %+v, %v: want a timeout, the forged reply ignored", res, err)
	}
	if r := <-replies; !strings.HasPrefix(r, own[:len(own)-1]+"reply.") {
		t.Fatalf("reply subject %q, want one under %s", r, own)
	}
}

func mustRPC(t *testing.T, a subjects.Agent) string {
	s, err := a.RPC()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A control plane one protocol ahead of an agent speaks to it in the
// agent's protocol (its hello says which), so that the agent, which
// refuses protocols it does not speak, serves it. Here the client plays a
// control plane of protocol wire.Version+1 serving down to wire.Version,
// and the agent is of this build (wire.DecodeRequest's check).
func TestCallSpeaksTheAgentsProtocol(t *testing.T) {
	f := setup(t)
	c, err := rpc.New(rpc.Config{Conn: f.nc, Presence: f.pr, Protocol: wire.Version + 1, OldestProtocol: wire.Version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	hello := func(protocol int) {
		t.Helper()
		b, _ := wire.Marshal(&wire.Hello{Workspace: ag.Workspace, Agent: ag.ID, Instance: "i1", Protocol: protocol, HeartbeatMs: 60000})
		if err := f.pr.Observe(ag, subjects.KindHello, b); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan int, 1)
	f.respond(t, func(r *wire.Request) []byte {
		got <- r.Version
		b, _ := wire.EncodeResult(r.ID, &wire.PingResult{Instance: "i1"})
		return b
	})

	hello(wire.Version) // one behind the client: older, served
	if err := c.Call(ctx(t), ag, wire.OpPing, nil, nil, rpc.CallOptions{Timeout: 5 * time.Second}); err != nil {
		t.Fatalf("a call to an agent one protocol behind: %v", err)
	}
	if v := <-got; v != wire.Version {
		t.Fatalf("request in protocol %d, want the agent's %d", v, wire.Version)
	}

	// An agent of the client's own protocol gets it (this build's agent
	// refuses it: what matters is what was sent).
	hello(wire.Version + 1)
	err = c.Call(ctx(t), ag, wire.OpPing, nil, nil, rpc.CallOptions{Timeout: 5 * time.Second})
	wantErr(t, err, wire.CodeInvalidArgument, wire.ReasonVersion, false)
}

// An agent answers on as few reply subjects as it has calls in flight:
// nats-server caches every subject a connection with publish permissions
// published on (up to 128 a connection), and with a new subject a call an
// agent that had answered 128 calls held some 25 KiB of spent ones there.
func TestRepliesReuseSubjects(t *testing.T) {
	f := setup(t)
	f.keepAlive(t)
	var mu sync.Mutex
	seen := map[string]bool{}
	f.respond(t, func(r *wire.Request) []byte {
		b, _ := wire.EncodeResult(r.ID, &wire.PingResult{Instance: "i1"})
		return b
	})
	watch, err := f.nc.Subscribe("agent.*.*.reply.>", func(m *nats.Msg) {
		mu.Lock()
		seen[m.Subject] = true
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = watch.Unsubscribe() })
	const inFlight, rounds = 4, 50
	for range rounds {
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() {
				var res wire.PingResult
				if err := f.c.Call(ctx(t), ag, wire.OpPing, nil, &res, rpc.CallOptions{Timeout: 5 * time.Second}); err != nil || res.Instance != "i1" {
					t.Errorf("call: %+v, %v", res, err)
				}
			})
		}
		wg.Wait()
	}
	_ = f.nc.Flush()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || len(seen) > inFlight {
		t.Fatalf("%d calls, at most %d at once, were answered on %d reply subjects, want 1 to %d", inFlight*rounds, inFlight, len(seen), inFlight)
	}
}

// A reply that comes again on a reply subject after its call was answered
// (here the agent answers each request twice, the second time late) is not
// taken for the reply of the next call on that subject: each call gets the
// answer to its own request.
func TestRepeatedReplyIsNotTheNextCalls(t *testing.T) {
	f := setup(t)
	f.keepAlive(t)
	type answered struct {
		reply string
		data  []byte
	}
	again := make(chan answered, 16)
	subj := mustRPC(t, ag)
	sub, err := f.nc.Subscribe(subj, func(m *nats.Msg) {
		req, err := wire.DecodeRequest(m.Data)
		if err != nil {
			t.Error(err)
			return
		}
		b, _ := wire.EncodeResult(req.ID, &wire.PingResult{Instance: req.ID})
		_ = f.nc.Publish(m.Reply, b)
		again <- answered{m.Reply, b}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	_ = f.nc.Flush()
	replies := map[string]bool{}
	for i := range 10 {
		if i > 0 {
			// The previous call's reply, once more, on the subject the
			// next call is about to wait on.
			a := <-again
			go func() {
				time.Sleep(time.Millisecond)
				_ = f.nc.Publish(a.reply, a.data)
			}()
		}
		var res wire.PingResult
		if err := f.c.Call(ctx(t), ag, wire.OpPing, nil, &res, rpc.CallOptions{Timeout: 5 * time.Second}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if replies[res.Instance] {
			t.Fatalf("call %d got the answer to an earlier request (%s)", i, res.Instance)
		}
		replies[res.Instance] = true
	}
}

// A call that ended without its reply leaves its reply subject unused for
// a while: a reply that names no request (the server's no-responders
// status, or an agent's answer to a request it could not read) may still
// come on it, and must not be the next call's.
func TestUnansweredReplySubjectRests(t *testing.T) {
	f := setup(t)
	f.keepAlive(t)
	got := make(chan string, 2)
	first := true
	sub, err := f.nc.Subscribe(mustRPC(t, ag), func(m *nats.Msg) {
		got <- m.Reply
		if first {
			first = false
			return // the first call times out
		}
		req, _ := wire.DecodeRequest(m.Data)
		b, _ := wire.EncodeResult(req.ID, &wire.PingResult{Instance: "i1"})
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	_ = f.nc.Flush()
	err = f.c.Call(ctx(t), ag, wire.OpPing, nil, nil, rpc.CallOptions{Timeout: 200 * time.Millisecond})
	if we := wire.AsError(err); we == nil || we.Code != wire.CodeDeadlineExceeded {
		t.Fatalf("first call: %v, want a timeout", err)
	}
	var res wire.PingResult
	if err := f.c.Call(ctx(t), ag, wire.OpPing, nil, &res, rpc.CallOptions{Timeout: 5 * time.Second}); err != nil || res.Instance != "i1" {
		t.Fatalf("second call: %+v, %v", res, err)
	}
	if a, b := <-got, <-got; a == b {
		t.Fatalf("the call after an unanswered one waited on the same reply subject %s", a)
	}
}
