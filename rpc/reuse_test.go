package rpc_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/internal/natstest"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// replyNumber is the number a reply subject ends with (base 36).
func replyNumber(t *testing.T, reply string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(reply[strings.LastIndexByte(reply, '.')+1:], 36, 64)
	if err != nil {
		t.Fatalf("reply subject %q: %v", reply, err)
	}
	return n
}

// echoPing is the answer to request m, a ping whose body is a PingResult:
// a PingResult with the body's Instance, so that each call can tell its
// own answer. ok is false, after t.Error, when m cannot be read.
func echoPing(t *testing.T, m *nats.Msg) (b []byte, ok bool) {
	req, err := wire.DecodeRequest(m.Data)
	if err != nil {
		t.Error(err)
		return nil, false
	}
	var body wire.PingResult
	if err := req.DecodeBody(&body); err != nil {
		t.Error(err)
		return nil, false
	}
	b, _ = wire.EncodeResult(req.ID, &wire.PingResult{Instance: body.Instance})
	return b, true
}

// unanswered tells the error of a call its agent did not answer in time:
// 504, or 503 when a loaded machine delayed a heartbeat past the lease.
func unanswered(err error) bool {
	we := wire.AsError(err)
	return we != nil && (we.Code == wire.CodeDeadlineExceeded || we.Code == wire.CodeUnavailable) && rpc.MaybeDelivered(err)
}

// An agent that never answers (a hostile one, or a frozen laptop whose
// connection is still up) does not make its reply subjects grow with the
// calls made to it: the subjects of calls that ended without their reply
// rest, but only a few of an agent's at a time. Otherwise every call
// ending unanswered in the last minute held one, each new call scanned
// them all, and the agent's connection published on ever new subjects
// again (the permission cache the reuse is there to keep small).
func TestUnansweredCallsKeepReplySubjectsFew(t *testing.T) {
	f := setup(t)
	f.keepAlive(t)
	var most atomic.Uint64
	sub, err := f.nc.Subscribe(mustRPC(t, ag), func(m *nats.Msg) {
		n := replyNumber(t, m.Reply)
		for {
			old := most.Load()
			if n <= old || most.CompareAndSwap(old, n) {
				break
			}
		}
	}) // never answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	_ = f.nc.Flush()
	const calls = 200
	for i := range calls {
		err := f.c.Call(ctx(t), ag, wire.OpPing, nil, nil, rpc.CallOptions{Timeout: 5 * time.Millisecond})
		if !unanswered(err) {
			t.Fatalf("call %d: %v, want a timeout", i, err)
		}
	}
	_ = f.nc.Flush()
	if n := most.Load(); n >= 32 {
		t.Fatalf("%d calls one at a time to an agent that never answers used reply subjects up to number %d", calls, n)
	}
}

// Calls from many goroutines at once, to an agent that answers some
// requests once, some twice, some only after the call gave up and some
// never, each get the answer to their own request or an error: never the
// answer to another call that used the same reply subject before.
func TestConcurrentCallsGetOnlyTheirOwnAnswers(t *testing.T) {
	f := setup(t)
	f.keepAlive(t)
	var late sync.WaitGroup
	t.Cleanup(late.Wait)
	sub, err := f.nc.Subscribe(mustRPC(t, ag), func(m *nats.Msg) {
		b, ok := echoPing(t, m)
		if !ok {
			return
		}
		switch rand.IntN(4) {
		case 0: // once
			_ = f.nc.Publish(m.Reply, b)
		case 1: // twice
			_ = f.nc.Publish(m.Reply, b)
			_ = f.nc.Publish(m.Reply, b)
		case 2: // after the call gave up, then again later
			late.Go(func() {
				time.Sleep(40 * time.Millisecond)
				_ = f.nc.Publish(m.Reply, b)
				time.Sleep(40 * time.Millisecond)
				_ = f.nc.Publish(m.Reply, b)
			})
		case 3: // never
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	_ = f.nc.Flush()
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				mine := strconv.Itoa(g) + "/" + strconv.Itoa(i)
				var res wire.PingResult
				err := f.c.Call(ctx(t), ag, wire.OpPing, &wire.PingResult{Instance: mine}, &res, rpc.CallOptions{Timeout: 25 * time.Millisecond})
				if err != nil {
					if !unanswered(err) {
						t.Errorf("call %s: %v", mine, err)
					}
					failed.Add(1)
					continue
				}
				if res.Instance != mine {
					t.Errorf("call %s got the answer to call %s", mine, res.Instance)
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() == 0 || failed.Load() == 0 {
		t.Fatalf("%d calls answered and %d not: the test exercised neither reuse nor rest", ok.Load(), failed.Load())
	}
}

// An agent cannot answer another agent's calls on the reused reply
// subjects, even knowing them exactly (the control plane's owner token is
// in every request it receives; the number is the lowest free, so 0 for a
// call alone) and naming the call's request: its credentials publish only
// under its own subjects. The victim's call gets the victim's answer.
func TestAgentCannotAnswerOnAnotherAgentsReplySubject(t *testing.T) {
	auth := natstest.StartAuth(t)
	svc := auth.Service(t)
	pr := presence.New(presence.Config{MinLease: time.Second})
	t.Cleanup(pr.Close)
	c, err := rpc.New(rpc.Config{Conn: svc, Presence: pr, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	victim := subjects.Agent{Workspace: "wsv", ID: "victim"}
	attacker := subjects.Agent{Workspace: "wsa", ID: "attacker"}
	hb, _ := wire.Marshal(&wire.Heartbeat{Instance: "i1", IntervalMs: 60000})
	for _, a := range []subjects.Agent{victim, attacker} {
		if err := pr.Observe(a, subjects.KindHeartbeat, hb); err != nil {
			t.Fatal(err)
		}
	}
	connect := func(a subjects.Agent) (*nats.Conn, chan error) {
		cfg := auth.Identity(t, a)
		opt := nats.UserJWTAndSeed(cfg.JWT, cfg.Seed)
		errs := make(chan error, 16)
		nc := natstest.Connect(t, auth.Server, opt, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
		return nc, errs
	}
	vc, _ := connect(victim)
	ac, aerrs := connect(attacker)

	// The attacker learns the owner token from a request to itself.
	owner := make(chan string, 1)
	asub, err := ac.Subscribe(mustRPC(t, attacker), func(m *nats.Msg) {
		req, _ := wire.DecodeRequest(m.Data)
		b, _ := wire.EncodeResult(req.ID, &wire.PingResult{Instance: "attacker"})
		_ = m.Respond(b)
		parts := strings.Split(m.Reply, ".")
		select {
		case owner <- parts[len(parts)-2]:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = asub.Unsubscribe() })
	_ = ac.Flush()
	if err := c.Call(ctx(t), attacker, wire.OpPing, nil, nil, rpc.CallOptions{Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	tok := <-owner

	// The victim answers after the attacker tried to answer first, on the
	// victim's reply subject, naming the victim's request (as if leaked).
	forged := make(chan struct{})
	vsub, err := vc.Subscribe(mustRPC(t, victim), func(m *nats.Msg) {
		req, _ := wire.DecodeRequest(m.Data)
		want, _ := victim.Reply(tok, "0")
		if m.Reply != want {
			t.Errorf("the victim's lone call waits on %q, want %q", m.Reply, want)
		}
		b, _ := wire.EncodeResult(req.ID, &wire.PingResult{Instance: "forged"})
		_ = ac.Publish(m.Reply, b)
		_ = ac.Flush()
		<-forged
		b, _ = wire.EncodeResult(req.ID, &wire.PingResult{Instance: "victim"})
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vsub.Unsubscribe() })
	_ = vc.Flush()
	go func() {
		defer close(forged)
		select {
		case err := <-aerrs:
			if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
				t.Errorf("attacker's error: %v, want a permissions violation", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("the attacker's publish on the victim's reply subject was not refused")
		}
	}()
	var res wire.PingResult
	if err := c.Call(ctx(t), victim, wire.OpPing, nil, &res, rpc.CallOptions{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if res.Instance != "victim" {
		t.Fatalf("the victim's call got %q's answer", res.Instance)
	}
}

// A reply that names no request (the answer an agent gives to a request it
// could not read) is taken by the call waiting on its subject; when the
// agent sends it again (two connections of one agent both serving during a
// takeover, or a late duplicate), the repeat must not be the answer of the
// next call to reuse that subject, which gets its own.
func TestRepeatedUnnamedReplyIsNotTheNextCalls(t *testing.T) {
	f := setup(t)
	f.keepAlive(t)
	first := make(chan *nats.Msg, 1)
	unnamed := wire.EncodeError("", wire.Errorf(wire.CodeInvalidArgument, "", "cannot read the request"))
	sub, err := f.nc.Subscribe(mustRPC(t, ag), func(m *nats.Msg) {
		req, err := wire.DecodeRequest(m.Data)
		if err != nil {
			t.Error(err)
			return
		}
		select {
		case first <- m: // the first request: answered with no request id
			_ = f.nc.Publish(m.Reply, unnamed)
			return
		default:
		}
		// The next request: the first one's answer comes again, late,
		// then this one's.
		prev := <-first
		_ = f.nc.Publish(prev.Reply, unnamed)
		_ = f.nc.Flush()
		time.Sleep(20 * time.Millisecond)
		b, _ := wire.EncodeResult(req.ID, &wire.PingResult{Instance: "i1"})
		_ = f.nc.Publish(m.Reply, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	_ = f.nc.Flush()
	err = f.c.Call(ctx(t), ag, wire.OpPing, nil, nil, rpc.CallOptions{Timeout: 5 * time.Second})
	if we := wire.AsError(err); we == nil || we.Code != wire.CodeInvalidArgument {
		t.Fatalf("first call: %v, want the agent's invalid_argument", err)
	}
	var res wire.PingResult
	if err := f.c.Call(ctx(t), ag, wire.OpPing, nil, &res, rpc.CallOptions{Timeout: 5 * time.Second}); err != nil || res.Instance != "i1" {
		t.Fatalf("second call: %+v, %v; want its own answer", res, err)
	}
}

// A call that saw only replies to other requests on its subject, then gave
// up, ended without its reply: its subject rests like any unanswered one,
// so the answer the agent sends it later with no request id (here, to a
// request it could not read) is not taken by the next call.
func TestCallThatSawOnlyOthersRepliesRests(t *testing.T) {
	f := setup(t)
	f.keepAlive(t)
	first := make(chan *nats.Msg, 1)
	unnamed := wire.EncodeError("", wire.Errorf(wire.CodeInvalidArgument, "", "cannot read the request"))
	sub, err := f.nc.Subscribe(mustRPC(t, ag), func(m *nats.Msg) {
		req, err := wire.DecodeRequest(m.Data)
		if err != nil {
			t.Error(err)
			return
		}
		select {
		case first <- m: // the first request: an answer to another one, then nothing
			stray, _ := wire.EncodeResult("0123456789abcdef", &wire.PingResult{Instance: "stray"})
			_ = f.nc.Publish(m.Reply, stray)
			return
		default:
		}
		prev := <-first
		_ = f.nc.Publish(prev.Reply, unnamed)
		_ = f.nc.Flush()
		time.Sleep(20 * time.Millisecond)
		b, _ := wire.EncodeResult(req.ID, &wire.PingResult{Instance: "i1"})
		_ = f.nc.Publish(m.Reply, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	_ = f.nc.Flush()
	err = f.c.Call(ctx(t), ag, wire.OpPing, nil, nil, rpc.CallOptions{Timeout: 200 * time.Millisecond})
	if !unanswered(err) {
		t.Fatalf("first call: %v, want a timeout", err)
	}
	var res wire.PingResult
	if err := f.c.Call(ctx(t), ag, wire.OpPing, nil, &res, rpc.CallOptions{Timeout: 5 * time.Second}); err != nil || res.Instance != "i1" {
		t.Fatalf("second call: %+v, %v; want its own answer", res, err)
	}
}
