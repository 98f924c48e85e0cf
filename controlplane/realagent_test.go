package controlplane

import (
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
)

// realAgent enrolls id in ws and runs a real agent serving root until the
// test ends; it returns the agent's target.
func realAgent(t testing.TB, s *Server, ws, id, root string) *client.Target {
	t.Helper()
	ta := enrollAgent(t, s, ws, id)
	ident := &enroll.Config{URL: s.URL(), Workspace: ta.ag.Workspace, Agent: ta.ag.ID, NATSURLs: ta.urls, JWT: ta.jwt, Seed: string(ta.seed)}
	runAgent(t, s, ident, root)
	return adminClient(s).Agent(ws, id)
}
