package controlplane

import (
	"context"
	"errors"
	"testing"

	"github.com/outposthq/outpost/wire"
)

// The agent and workspace checks of every call (agentEnrolled,
// workspaceExists: they decode only what they answer) keep API.md's
// statuses: a workspace that does not exist and an agent never enrolled
// or revoked are 404; an enrolled agent that is offline (never connected,
// or connected and gone) is 503 unavailable, never 404, and so is one
// whose record carries fields the checks no longer decode.
func TestCallStatusesOfTheChecks(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	if _, err := admin.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	enrollAgent(t, s, "ws1", "never")
	gone := enrollAgent(t, s, "ws1", "gone")
	m, nc := serveMock(t, gone)
	waitFor(t, waitLong, "online", func() bool {
		_, err := admin.Agent("ws1", "gone").Capabilities(ctx)
		return err == nil
	})
	stopMock(m, nc)
	enrollAgent(t, s, "ws1", "revoked")
	if err := admin.RevokeAgent(ctx, "ws1", "revoked"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ws, agent string
		code      wire.Code
	}{
		{"nows", "never", wire.CodeNotFound},
		{"ws1", "nobody", wire.CodeNotFound},
		{"ws1", "revoked", wire.CodeNotFound},
		{"ws1", "never", wire.CodeUnavailable},
		{"ws1", "gone", wire.CodeUnavailable},
	} {
		_, err := admin.Agent(tt.ws, tt.agent).Capabilities(ctx)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != tt.code {
			t.Errorf("capabilities of %s/%s: %v, want %s", tt.ws, tt.agent, err, tt.code)
			continue
		}
		if tt.code == wire.CodeUnavailable && we.Reason != wire.ReasonAgentOffline && we.Reason != wire.ReasonAgentReconnecting {
			t.Errorf("capabilities of offline %s/%s: %v, want agent_offline or agent_reconnecting", tt.ws, tt.agent, err)
		}
	}
}
