package authority

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
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

func newAuthority(t testing.TB) *Authority {
	t.Helper()
	a, err := LoadOrCreateAuthority(t.TempDir())
	if err != nil {
		t.Fatalf("LoadOrCreateAuthority: %v", err)
	}
	return a
}

// startServer runs an in-process nats-server trusting a, with its resolver
// in jwtDir, and stops it at cleanup.
func startServer(t testing.TB, a *Authority, jwtDir string) *server.Server {
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
	opt, err := enroll.CredsOption(creds)
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

// serviceConn connects as the control plane's user of the app account.
func serviceConn(t testing.TB, a *Authority, s *server.Server) *nats.Conn {
	t.Helper()
	creds, err := a.ServiceCreds()
	if err != nil {
		t.Fatalf("ServiceCreds: %v", err)
	}
	return connectCreds(t, s, creds, nats.CustomInboxPrefix(subjects.ControlPlaneInboxPrefix))
}

// agentsConn connects as the control plane's user of the agents' account.
func agentsConn(t testing.TB, a *Authority, s *server.Server) *nats.Conn {
	t.Helper()
	creds, err := a.AgentsServiceCreds()
	if err != nil {
		t.Fatalf("AgentsServiceCreds: %v", err)
	}
	return connectCreds(t, s, creds)
}

func systemConn(t testing.TB, a *Authority, s *server.Server) *nats.Conn {
	t.Helper()
	creds, err := a.SystemCreds()
	if err != nil {
		t.Fatalf("SystemCreds: %v", err)
	}
	return connectCreds(t, s, creds)
}

// agentConfig makes a key pair for ag, as Enroll would, and a Config holding
// the JWT a issues for it.
func agentConfig(t testing.TB, a *Authority, s *server.Server, ag subjects.Agent) *enroll.Config {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	token, err := a.IssueAgentJWT(ag, pub)
	if err != nil {
		t.Fatalf("IssueAgentJWT: %v", err)
	}
	c := &enroll.Config{
		URL:       "http://127.0.0.1:1",
		Workspace: ag.Workspace,
		Agent:     ag.ID,
		NATSURLs:  []string{s.ClientURL()},
		JWT:       token,
		Seed:      string(seed),
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return c
}

func publicKeyOf(t testing.TB, c *enroll.Config) string {
	t.Helper()
	kp, err := nkeys.FromSeed([]byte(c.Seed))
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return pub
}

// asyncErrs collects a connection's asynchronous errors for the test
// goroutine; the callback never blocks and never calls t.Fatal.
type asyncErrs struct {
	ch chan error
}

func newAsyncErrs() *asyncErrs { return &asyncErrs{ch: make(chan error, 64)} }

func (e *asyncErrs) option() nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case e.ch <- err:
		default:
		}
	})
}

// waitViolation waits for a permissions violation naming subject.
func (e *asyncErrs) waitViolation(t testing.TB, subject string) {
	t.Helper()
	timer := time.NewTimer(waitLong)
	defer timer.Stop()
	for {
		select {
		case err := <-e.ch:
			msg := err.Error()
			if strings.Contains(strings.ToLower(msg), "permissions violation") && strings.Contains(msg, `"`+subject+`"`) {
				return
			}
			t.Logf("other async error: %v", err)
		case <-timer.C:
			t.Fatalf("no permissions violation for %q within %v", subject, waitLong)
		}
	}
}

// waitFor waits for an async error matching target.
func (e *asyncErrs) waitFor(t testing.TB, target error) {
	t.Helper()
	timer := time.NewTimer(waitLong)
	defer timer.Stop()
	for {
		select {
		case err := <-e.ch:
			if errors.Is(err, target) {
				return
			}
			t.Logf("other async error: %v", err)
		case <-timer.C:
			t.Fatalf("no async error %v within %v", target, waitLong)
		}
	}
}

// expectNone checks that no async error arrives within quietPeriod.
func (e *asyncErrs) expectNone(t testing.TB) {
	t.Helper()
	select {
	case err := <-e.ch:
		t.Fatalf("unexpected async error: %v", err)
	case <-time.After(quietPeriod):
	}
}

// connectAgent connects with the agent's Config.NATSOptions.
func connectAgent(t testing.TB, c *enroll.Config, extra ...nats.Option) (*nats.Conn, error) {
	t.Helper()
	nc, err := nats.Connect(c.NATSServers(), append(c.NATSOptions(), extra...)...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(nc.Close)
	return nc, nil
}

// closedSignal reports when a connection is closed for good.
type closedSignal struct {
	once sync.Once
	ch   chan struct{}
}

func newClosedSignal() *closedSignal { return &closedSignal{ch: make(chan struct{})} }

func (c *closedSignal) option() nats.Option {
	return nats.ClosedHandler(func(*nats.Conn) { c.once.Do(func() { close(c.ch) }) })
}
