package controlplane

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// realAgent enrolls id in ws and runs a real agent serving a fresh root
// until the test ends; it returns the root once the agent is online.
func realAgent(t *testing.T, s *Server, ws, id string) string {
	t.Helper()
	ctx := context.Background()
	tok, err := adminClient(s).CreateEnrollmentToken(ctx, ws, client.EnrollmentTokenRequest{Agent: id})
	if err != nil {
		t.Fatal(err)
	}
	ident, err := enroll.Enroll(ctx, s.URL(), tok.Token, "")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	a, err := agent.New(agent.Config{Identity: ident, Root: root, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	t.Cleanup(func() { cancel(); <-done })
	ag := subjects.Agent{Workspace: ws, ID: id}
	waitFor(t, waitLong, id+" online", func() bool { return s.presence.Get(ag).Status == "online" })
	return root
}

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
	laptopRoot := realAgent(t, s, "w1", "a1")
	realAgent(t, s, "w1", "a2")
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
