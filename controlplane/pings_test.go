package controlplane

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane/client"
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

// TestServerPingInterval: the embedded server pings at the agents'
// interval whenever an agent may reach its native port, and at
// nats-server's default only when every agent comes over wss, which
// handleNATS watches itself (TestSilentAgentClosedOverWSS).
func TestServerPingInterval(t *testing.T) {
	tests := []struct {
		name   string
		tls    bool
		listen string
		public []string
		want   time.Duration
	}{
		{"plaintext: agents on the native port", false, "127.0.0.1:4222", nil, wire.PingInterval},
		{"TLS, NATS on loopback: agents told wss", true, "127.0.0.1:4222", nil, quietPingInterval},
		{"TLS, NATS on localhost", true, "localhost:4222", nil, quietPingInterval},
		{"TLS, NATS on IPv6 loopback", true, "[::1]:4222", nil, quietPingInterval},
		{"TLS, NATS on every interface", true, "0.0.0.0:4222", nil, wire.PingInterval},
		{"TLS, NATS on a LAN address", true, "10.1.2.3:4222", nil, wire.PingInterval},
		{"TLS, public wss URLs", true, "127.0.0.1:4222", []string{"wss://cp.example.com/v1/nats", "ws://10.0.0.1:8080/v1/nats"}, quietPingInterval},
		{"TLS, a public native URL (a relay in front of the loopback port)", true, "127.0.0.1:4222", []string{"wss://cp.example.com/v1/nats", "tls://cp.example.com:4222"}, wire.PingInterval},
		{"TLS, a public nats:// URL", true, "127.0.0.1:4222", []string{"nats://10.0.0.1:4222"}, wire.PingInterval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{cfg: Config{NATSListen: tt.listen, PublicNATSURLs: tt.public}}
			if tt.tls {
				s.tls = &serverTLS{}
			}
			if got := s.serverPingInterval(); got != tt.want {
				t.Errorf("serverPingInterval() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSilentAgentClosedOverWSS: over wss the embedded server looks at its
// clients only at nats-server's default interval, so the control plane
// watches the agents' links itself. A connection with the agent's
// credentials that sends nothing after its connect is closed after
// agentSilence; one that pings as agents do (every wire.PingInterval)
// stays open.
func TestSilentAgentClosedOverWSS(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.TLSSelfSigned = []string{"127.0.0.1"}
	s := startServer(t, cfg)
	v, err := s.ns.Varz(nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.PingInterval != quietPingInterval {
		t.Fatalf("the embedded server pings every %v, want %v", v.PingInterval, quietPingInterval)
	}
	ctx := context.Background()
	cl := client.New(s.URL(), s.AdminToken())
	cl.HTTP = trusting(t, s)
	if _, err := cl.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	// connect connects with a newly enrolled agent's credentials, as the
	// agent would (the URL enrollment gave it), with opts.
	connect := func(id string, opts ...nats.Option) *nats.Conn {
		t.Helper()
		ident := enrollPinned(t, s, cl, "ws1", id)
		if !strings.HasPrefix(ident.NATSURLs[0], "wss://") {
			t.Fatalf("agents are told %v, want wss://", ident.NATSURLs)
		}
		opts = append([]nats.Option{nats.UserJWTAndSeed(ident.JWT, ident.Seed), nats.RootCAs(s.CAFile()),
			nats.NoReconnect(), nats.Timeout(waitShort)}, opts...)
		nc, err := nats.Connect(ident.NATSURLs[0], opts...)
		if err != nil {
			t.Fatalf("connect %s: %v", id, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	closed := make(chan time.Time, 1)
	sent := &lastWrite{}
	connect("silent", nats.PingInterval(time.Hour), nats.SetCustomDialer(sent), nats.ClosedHandler(func(*nats.Conn) {
		select {
		case closed <- time.Now():
		default:
		}
	}))
	connected := time.Now()
	nc2 := connect("pinging", nats.PingInterval(wire.PingInterval), nats.MaxPingsOutstanding(wire.MaxPingsOut))
	// The server's view: the silent connection leaves its clients (its
	// disconnect event, which ends an agent's presence, goes out then).
	clients := s.ns.NumClients()
	var gone time.Time
	for deadline := connected.Add(agentSilence + 15*time.Second); gone.IsZero(); time.Sleep(50 * time.Millisecond) {
		switch n := s.ns.NumClients(); {
		case n < clients:
			gone = time.Now()
		case time.Now().After(deadline):
			t.Fatalf("the silent connection was still open %v after its connect (the control plane closes one after %v)", time.Since(connected), agentSilence)
		}
	}
	// Its last bytes before the close: its pong to the server's one ping
	// of a new client (its round-trip measurement, 2 s after the connect).
	// What it writes on seeing the close comes after.
	took := gone.Sub(sent.lastBefore(gone.Add(-agentSilence / 2)))
	t.Logf("the control plane closed the silent connection %v after the last bytes it sent (%v after its connect)",
		took.Round(time.Millisecond), gone.Sub(connected).Round(time.Millisecond))
	if took < agentSilence || took > agentSilence+3*time.Second {
		t.Errorf("the control plane closed the silent connection %v after the last bytes it sent, want %v (and a little)", took, agentSilence)
	}
	select {
	case at := <-closed:
		t.Logf("the silent client saw its connection closed %v after its connect", at.Sub(connected).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Errorf("the silent client did not see its connection closed")
	}
	time.Sleep(time.Until(connected.Add(agentSilence + wire.PingInterval)))
	if !nc2.IsConnected() {
		t.Errorf("the connection that pings every %v was closed: %v", wire.PingInterval, nc2.LastError())
	}
}

// lastWrite is a nats.CustomDialer that remembers when the connections it
// dialed wrote.
type lastWrite struct {
	mu sync.Mutex
	at []time.Time
}

func (d *lastWrite) Dial(network, address string) (net.Conn, error) {
	c, err := net.Dial(network, address)
	if err != nil {
		return nil, err
	}
	return &writeTimes{Conn: c, d: d}, nil
}

// lastBefore is the last write at or before t.
func (d *lastWrite) lastBefore(t time.Time) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	var last time.Time
	for _, at := range d.at {
		if !at.After(t) {
			last = at
		}
	}
	return last
}

type writeTimes struct {
	net.Conn
	d *lastWrite
}

func (c *writeTimes) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.d.mu.Lock()
	c.d.at = append(c.d.at, time.Now())
	c.d.mu.Unlock()
	return n, err
}
