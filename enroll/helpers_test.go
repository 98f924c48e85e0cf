package enroll

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/outposthq/outpost/authority"
)

// Fixed waits. revokeBound is the API contract's bound (DELETE agent: its
// connection is closed within 2 s); the others are generous so a loaded
// machine does not flake.
const (
	revokeBound = 2 * time.Second
	waitLong    = 10 * time.Second
	quietPeriod = 250 * time.Millisecond // how long "nothing arrives" is watched
	pollEvery   = 10 * time.Millisecond
)

func newAuthority(t testing.TB) *authority.Authority {
	t.Helper()
	a, err := authority.LoadOrCreateAuthority(t.TempDir())
	if err != nil {
		t.Fatalf("LoadOrCreateAuthority: %v", err)
	}
	return a
}

// startServer runs an in-process nats-server trusting a, with its resolver
// in jwtDir, and stops it at cleanup.
func startServer(t testing.TB, a *authority.Authority, jwtDir string) *server.Server {
	t.Helper()
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	}
	if err := a.ConfigureServer(opts, jwtDir); err != nil {
		t.Fatalf("ConfigureServer: %v", err)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	s.Start()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	if !s.ReadyForConnections(waitLong) {
		t.Fatal("nats-server not ready")
	}
	return s
}

// connectCreds connects with creds file bytes and closes at cleanup.
func connectCreds(t testing.TB, s *server.Server, creds []byte, extra ...nats.Option) *nats.Conn {
	t.Helper()
	opt, err := CredsOption(creds)
	if err != nil {
		t.Fatalf("CredsOption: %v", err)
	}
	nc, err := nats.Connect(s.ClientURL(), append([]nats.Option{opt}, extra...)...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// serviceConn connects as the control plane's user of the agents' account.
func serviceConn(t testing.TB, a *authority.Authority, s *server.Server) *nats.Conn {
	t.Helper()
	creds, err := a.AgentsServiceCreds()
	if err != nil {
		t.Fatalf("AgentsServiceCreds: %v", err)
	}
	return connectCreds(t, s, creds)
}

func publicKeyOf(t testing.TB, c *Config) string {
	t.Helper()
	kp, err := nkeys.FromSeed([]byte(c.Seed))
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return pub
}

// connectAgent connects with the agent's Config.NATSOptions.
func connectAgent(t testing.TB, c *Config, extra ...nats.Option) (*nats.Conn, error) {
	t.Helper()
	nc, err := nats.Connect(c.NATSServers(), append(c.NATSOptions(), extra...)...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(nc.Close)
	return nc, nil
}
