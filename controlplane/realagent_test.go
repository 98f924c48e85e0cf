package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
)

// realAgent enrolls id in ws and runs a real agent serving root until the
// test ends; it returns the agent's target.
func realAgent(t testing.TB, s *Server, ws, id, root string) *client.Target {
	t.Helper()
	ta := enrollAgent(t, s, ws, id)
	ident := &enroll.Config{URL: s.URL(), Workspace: ta.ag.Workspace, Agent: ta.ag.ID, NATSURLs: ta.urls, JWT: ta.jwt, Seed: string(ta.seed)}
	a, err := agent.New(agent.Config{Identity: ident, Root: root, HeartbeatInterval: heartbeatEvery, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitLong):
			t.Errorf("agent %s did not stop", id)
		}
	})
	waitFor(t, waitLong, id+" online", func() bool { return s.presence.Get(ta.ag).Status == "online" })
	return adminClient(s).Agent(ws, id)
}
