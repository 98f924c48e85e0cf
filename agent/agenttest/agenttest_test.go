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

func TestSwitches(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	ag := subjects.Agent{Workspace: "w", ID: "a"}
	tr := presence.New(presence.Config{MinLease: 100 * time.Millisecond, Sweep: 10 * time.Millisecond})
	if err := tr.Start(nc); err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	calls, _ := rpc.New(rpc.Config{Conn: nc, Presence: tr, Poll: 10 * time.Millisecond})
	m, err := agenttest.New(nc, ag)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.StartHeartbeats(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.WaitStatus(ctx, ag, presence.Online); err != nil {
		t.Fatal(err)
	}
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
