package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/wire"
)

// TestIdleAgentPings watches an idle agent's NATS link to the embedded
// server through a relay: in 12.5 s the agent pings 2 or 3 times (once
// every 5 s) and gets a pong for each, and the server sends no ping of its
// own, since the agent's pings tell it the agent is there. That is what
// 10,000 idle agents cost the control plane's machine (issue 20): an
// interval of 2 s, or a server interval shorter than the agents', shows up
// here as more pings. The agent heartbeats at its default interval, as
// agents do, so that its heartbeats do not stand in for its pings.
func TestIdleAgentPings(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	if _, err := adminClient(s).CreateWorkspace(context.Background(), "ws1"); err != nil {
		t.Fatal(err)
	}
	ta := enrollAgent(t, s, "ws1", "idle")
	r := startRelay(t, strings.TrimPrefix(ta.urls[0], "nats://"))
	ident := &enroll.Config{URL: s.URL(), Workspace: ta.ag.Workspace, Agent: ta.ag.ID,
		NATSURLs: []string{r.url("nats")}, JWT: ta.jwt, Seed: string(ta.seed)}
	runAgentConfig(t, s, agent.Config{Identity: ident, Root: t.TempDir()})

	// The server measures a new client's round trip with one ping of its
	// own, at its first tick: count from its pong on.
	waitFor(t, 3*wire.PingInterval, "the server's first ping (its RTT measurement) and the agent's pong", func() bool {
		c, _ := r.pingPongs()
		return c.pingsDown >= 1 && c.pongsUp >= 1
	})
	before, _ := r.pingPongs()
	const window = 12500 * time.Millisecond
	time.Sleep(window)
	after, conns := r.pingPongs()
	agentPings, pongsToAgent := after.pingsUp-before.pingsUp, after.pongsDown-before.pongsDown
	serverPings, pongsFromAgent := after.pingsDown-before.pingsDown, after.pongsUp-before.pongsUp
	t.Logf("in %v the agent pinged %d times and got %d pongs; the server pinged %d times and got %d pongs",
		window, agentPings, pongsToAgent, serverPings, pongsFromAgent)
	if conns != 1 {
		t.Fatalf("the agent connected %d times: the counts mix connections", conns)
	}
	if agentPings < 2 || agentPings > 3 {
		t.Errorf("the agent pinged %d times in %v, want 2 or 3 (every 5 s)", agentPings, window)
	}
	if pongsToAgent < agentPings-1 || pongsToAgent > agentPings {
		t.Errorf("the agent got %d pongs for %d pings", pongsToAgent, agentPings)
	}
	if serverPings != 0 || pongsFromAgent != 0 {
		t.Errorf("the server pinged an agent that pings it: %d pings, %d pongs", serverPings, pongsFromAgent)
	}
}
