package agenttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/internal/natstest"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

var ag = subjects.Agent{Workspace: "w", ID: "a"}

// online starts a mock of ag heartbeating every 20 ms and a caller
// tracking its presence, and waits until the caller sees it online.
func online(t *testing.T) (context.Context, *agenttest.Agent, *rpc.Client, *presence.Tracker) {
	t.Helper()
	nc := natstest.Connect(t, natstest.Start(t))
	tr := presence.New(presence.Config{MinLease: 100 * time.Millisecond, Sweep: 10 * time.Millisecond})
	if err := tr.Start(nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	calls, _ := rpc.New(rpc.Config{Conn: nc, Presence: tr, Poll: 10 * time.Millisecond})
	m, err := agenttest.New(nc, ag)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	m.StartHeartbeats(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if err := tr.WaitStatus(ctx, ag, presence.Online); err != nil {
		t.Fatal(err)
	}
	return ctx, m, calls, tr
}

func TestSwitches(t *testing.T) {
	ctx, m, calls, tr := online(t)
	call := func(timeout time.Duration) error {
		return calls.Call(ctx, ag, wire.OpPing, nil, nil, rpc.CallOptions{Session: "s", Epoch: 3, Timeout: timeout})
	}
	if err := call(time.Second); err != nil {
		t.Fatalf("online ping: %v", err)
	}
	m.SetError(wire.OpPing, wire.Errorf(wire.CodeConflict, wire.ReasonFenced, "x"))
	if err := call(time.Second); wire.AsError(err).Reason != wire.ReasonFenced {
		t.Fatalf("SetError: %v", err)
	}
	m.SetError(wire.OpPing, nil)
	m.SetDelay(300 * time.Millisecond)
	if err := call(100 * time.Millisecond); wire.AsError(err).Code != wire.CodeDeadlineExceeded {
		t.Fatalf("slow mock with heartbeats: %v, want deadline_exceeded", err)
	}
	m.SetDelay(0)
	m.SetFrozen(true)
	m.StopHeartbeats()
	if err := call(5 * time.Second); wire.AsError(err).Reason != wire.ReasonAgentReconnecting || !rpc.MaybeDelivered(err) {
		t.Fatalf("frozen mock: %v, want 503 agent_reconnecting", err)
	}
	m.SetFrozen(false)
	if err := m.SetOnline(false); err != nil {
		t.Fatal(err)
	}
	if err := call(5 * time.Second); wire.AsError(err).HTTPStatus() != 503 || rpc.MaybeDelivered(err) {
		t.Fatalf("offline mock: %v, want 503 never delivered", err)
	}
	if n := m.Count(wire.OpPing); n != 4 {
		t.Fatalf("mock saw %d pings, want 4 (the offline one never reached it)", n)
	}
	if r := m.Requests()[0]; r.Session != "s" || r.Epoch != 3 {
		t.Fatalf("recorded request %+v", r)
	}
	if err := m.SetOnline(true); err != nil {
		t.Fatal(err)
	}
	m.PublishGoodbye()
	if err := tr.WaitStatus(ctx, ag, presence.Offline); err != nil {
		t.Fatal(err)
	}
}

// A handler returning ErrNoReply leaves the caller waiting, as a long poll
// does: with the mock heartbeating, the call ends at its deadline.
func TestErrNoReplyLeavesTheCallerWaiting(t *testing.T) {
	ctx, m, calls, _ := online(t)
	m.Handle(wire.OpProcRead, func(*wire.Request) (any, error) { return nil, agenttest.ErrNoReply })
	err := calls.Call(ctx, ag, wire.OpProcRead, &wire.ProcReadRequest{ID: "p1"}, nil, rpc.CallOptions{Timeout: 200 * time.Millisecond})
	if we := wire.AsError(err); we.Code != wire.CodeDeadlineExceeded || !rpc.MaybeDelivered(err) {
		t.Fatalf("call left unanswered: %v, want deadline_exceeded, maybe delivered", err)
	}
	if n := m.Count(wire.OpProcRead); n != 1 {
		t.Fatalf("mock saw %d reads, want 1", n)
	}
}

func TestWithHelloKeepsTheMocksIdentity(t *testing.T) {
	nc := natstest.Connect(t, natstest.Start(t))
	caps := map[string]bool{"git": false}
	m, err := agenttest.New(nc, ag, agenttest.WithHello(wire.Hello{
		Workspace: "other", Agent: "other", Instance: "other", Version: "9", Capabilities: caps,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	h := m.Hello()
	if h.Workspace != "w" || h.Agent != "a" || h.Instance != m.Instance() {
		t.Fatalf("hello names %s/%s instance %s, want the mock's w/a instance %s", h.Workspace, h.Agent, h.Instance, m.Instance())
	}
	if h.Version != "9" || h.Protocol != wire.Version || h.Hostname != "agenttest" || h.StartedAt.IsZero() || len(h.Capabilities) != 1 || h.Capabilities["git"] {
		t.Fatalf("hello %+v, want version 9, the capabilities given, defaults for the rest", h)
	}
	h.Capabilities["git"] = true
	if caps["git"] {
		t.Fatal("Hello shares its capabilities map with the option's")
	}
}
