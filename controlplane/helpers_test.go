package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Wait limits of the tests.
const (
	waitLong  = 15 * time.Second
	waitShort = 2 * time.Second
	pollEvery = 20 * time.Millisecond
)

// heartbeatEvery is the test agents' heartbeat interval.
const heartbeatEvery = 200 * time.Millisecond

// testConfig is a control plane on random ports with a fresh state dir.
func testConfig(t testing.TB) Config {
	t.Helper()
	return Config{
		Listen:         "127.0.0.1:0",
		NATSListen:     "127.0.0.1:0",
		StateDir:       stateDir(t),
		Logger:         testLogger(),
		PresenceWindow: 3 * time.Second,
	}
}

// stateDir is a new, owner-only directory (t.TempDir's let others in).
func stateDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testLogger discards logs unless OUTPOST_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("OUTPOST_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// startServer starts a control plane with cfg and closes it at the end.
func startServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// call does one HTTP call with a JSON body (nil for none; a []byte is sent
// as is) and returns the status and body.
func call(t testing.TB, s *Server, method, path, token string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// errorCode decodes an error body's code and reason.
func errorCode(t testing.TB, body []byte) (wire.Code, string) {
	t.Helper()
	var eb client.ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error == nil {
		t.Fatalf("not an error body: %s", body)
	}
	return eb.Error.Code, eb.Error.Reason
}

func adminClient(s *Server) *client.Client { return client.New(s.URL(), s.AdminToken()) }

// testAgent is an enrolled agent's identity and credentials, made as the
// agent would make them.
type testAgent struct {
	ag   subjects.Agent
	seed []byte
	pub  string
	jwt  string
	urls []string
}

func newKeys(t testing.TB) (pub string, seed []byte) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ = kp.PublicKey()
	seed, _ = kp.Seed()
	return pub, seed
}

// enrollAgent makes a token (for agent id, may be "") and enrolls with a
// fresh key pair.
func enrollAgent(t testing.TB, s *Server, ws, id string) *testAgent {
	t.Helper()
	ctx := context.Background()
	tok, err := adminClient(s).CreateEnrollmentToken(ctx, ws, client.EnrollmentTokenRequest{Agent: id})
	if err != nil {
		t.Fatalf("enrollment token: %v", err)
	}
	return redeem(t, s, tok.Token, "")
}

// redeem enrolls with token and a fresh key pair; it fails the test on any
// status but 200.
func redeem(t testing.TB, s *Server, token, name string) *testAgent {
	t.Helper()
	pub, seed := newKeys(t)
	status, body := call(t, s, "POST", "/v1/enroll", "", enroll.Request{Token: token, PublicKey: pub, Name: name, Hostname: "box", OS: "linux", Arch: "amd64"})
	if status != http.StatusOK {
		t.Fatalf("enroll: %d %s", status, body)
	}
	var resp enroll.Response
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	return &testAgent{ag: subjects.Agent{Workspace: resp.Workspace, ID: resp.Agent}, seed: seed, pub: pub, jwt: resp.JWT, urls: resp.NATSURLs}
}

// enrollPinned makes an enrollment token for agent id in ws through cl (an
// admin client of s) and enrolls with it as the agent would, pinning the
// CA the token names: for a control plane that serves TLS.
func enrollPinned(t testing.TB, s *Server, cl *client.Client, ws, id string) *enroll.Config {
	t.Helper()
	ctx := context.Background()
	tok, err := cl.CreateEnrollmentToken(ctx, ws, client.EnrollmentTokenRequest{Agent: id})
	if err != nil {
		t.Fatalf("enrollment token for %s: %v", id, err)
	}
	ident, err := enroll.Enroll(ctx, s.URL(), tok.Token, "", enroll.WithCAPin(tok.CASHA256))
	if err != nil {
		t.Fatalf("enroll %s: %v", id, err)
	}
	return ident
}

// connect connects to NATS with the agent's credentials.
func (a *testAgent) connect(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{
		nats.UserJWTAndSeed(a.jwt, string(a.seed)),
		nats.CustomInboxPrefix(mustInbox(a.ag)),
		nats.NoReconnect(),
		nats.Timeout(waitShort),
	}, opts...)
	return nats.Connect(a.urls[0], opts...)
}

func mustInbox(ag subjects.Agent) string {
	p, err := ag.Inbox()
	if err != nil {
		panic(err)
	}
	return p
}

func mustSubject(t testing.TB, ag subjects.Agent, kind string) string {
	t.Helper()
	s, err := ag.Subject(kind)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(pollEvery)
	}
}

// mockHello is what an agent says when a test finds its facts again in the
// API (agenttest.WithHello).
var mockHello = wire.Hello{Version: "test-1.0", OS: "linux", Arch: "arm64", Hostname: "fakehost",
	Capabilities: map[string]bool{"pty": true, "git": false}}

// serveMock serves ta with the mock responder (agent/agenttest) on the
// agent's own credentials, heartbeating every heartbeatEvery. Closing nc is
// the agent dropping off the network; both end with the test.
func serveMock(t testing.TB, ta *testAgent, opts ...agenttest.Option) (m *agenttest.Agent, nc *nats.Conn) {
	t.Helper()
	nc, err := ta.connect()
	if err != nil {
		t.Fatalf("agent connect: %v", err)
	}
	t.Cleanup(nc.Close)
	m, err = agenttest.New(nc, ta.ag, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	m.StartHeartbeats(heartbeatEvery)
	return m, nc
}

// stopMock stops m as a cleanly stopping agent stops: no more heartbeats
// or answers, a goodbye, its connection closed.
func stopMock(m *agenttest.Agent, nc *nats.Conn) {
	m.Close()
	m.PublishGoodbye()
	nc.Close()
}
