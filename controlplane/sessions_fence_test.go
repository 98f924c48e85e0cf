package controlplane

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// After a swap, the old backend's fence refuses what a stale control-plane
// replica still sends it at the old epoch: conflict/fenced, and nothing
// runs. A real agent, told the new epoch by the swap itself.
func TestSwapFencesOldAgent(t *testing.T) {
	s := startServer(t, testConfig(t))
	cl := adminClient(s)
	ctx := context.Background()
	if _, err := cl.CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	laptopRoot := t.TempDir()
	realAgent(t, s, "w1", "a1", laptopRoot)
	realAgent(t, s, "w1", "a2", t.TempDir())
	if _, err := cl.CreateSession(ctx, "w1", client.CreateSessionRequest{ID: "s1", Active: "laptop",
		Backends: map[string]client.SessionBackend{
			"laptop": {Kind: client.KindAgent, Agent: "a1"},
			"desk":   {Kind: client.KindAgent, Agent: "a2"},
		}}); err != nil {
		t.Fatal(err)
	}
	st, err := s.sessions.Session("w1", "s1").State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SwapSession(ctx, "w1", "s1", "desk", st.Epoch); err != nil {
		t.Fatalf("swap: %v", err)
	}

	laptop := subjects.Agent{Workspace: "w1", ID: "a1"}
	touch := &wire.ExecRequest{Argv: []string{"touch", "stale"}}
	err = s.rpc.Call(ctx, laptop, wire.OpExec, touch, nil, rpc.CallOptions{Session: st.UID, Epoch: st.Epoch})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeConflict || we.Reason != wire.ReasonFenced {
		t.Fatalf("exec at the old epoch after the swap: %v, want conflict/fenced", err)
	}
	if _, err := os.Stat(filepath.Join(laptopRoot, "stale")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a fenced exec ran: stat: %v", err)
	}
	// The fence is per session: the laptop still serves other work.
	if err := s.rpc.Call(ctx, laptop, wire.OpExec, &wire.ExecRequest{Argv: []string{"true"}}, nil, rpc.CallOptions{}); err != nil {
		t.Fatalf("exec outside the session: %v", err)
	}
}
