package controlplane

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
)

// relay is a TCP relay that keeps every byte it carries, both ways: a
// passive observer on the agent's link.
type relay struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	up    bytes.Buffer // from the client (the agent)
	down  bytes.Buffer // to the client
	conns []net.Conn
	wg    sync.WaitGroup
}

func startRelay(t *testing.T, to string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, to: to}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(func() {
		ln.Close()
		r.mu.Lock()
		for _, c := range r.conns {
			c.Close()
		}
		r.mu.Unlock()
		r.wg.Wait()
	})
	return r
}

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", r.to)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, c, up)
		r.mu.Unlock()
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			relayBoth(&tap{Conn: c, r: r}, up)
		}()
	}
}

// relayBoth copies a to b and b to a until either side ends, then closes
// both.
func relayBoth(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(a, b)
		a.Close()
		b.Close()
	}()
	_, _ = io.Copy(b, a)
	a.Close()
	b.Close()
	<-done
}

// tap records what is read from and written to a connection.
type tap struct {
	net.Conn
	r *relay
}

func (t *tap) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	t.r.keep(&t.r.up, p[:n])
	return n, err
}

func (t *tap) Write(p []byte) (int, error) { t.r.keep(&t.r.down, p); return t.Conn.Write(p) }

func (r *relay) keep(dir *bytes.Buffer, p []byte) {
	r.mu.Lock()
	dir.Write(p)
	r.mu.Unlock()
}

// pingPongs is what a relay carried of NATS's PING and PONG lines, from the
// client (up) and to it (down).
type pingPongs struct{ pingsUp, pingsDown, pongsUp, pongsDown int }

// pingPongs counts the PING and PONG lines the relay carried so far, in
// plaintext: the op and CRLF at the start of a direction or after a line's
// end. conns is how many connections it relayed.
func (r *relay) pingPongs() (c pingPongs, conns int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count := func(b []byte, op string) int {
		line := []byte(op + "\r\n")
		n := 0
		for i := 0; ; {
			k := bytes.Index(b[i:], line)
			if k < 0 {
				return n
			}
			if at := i + k; at == 0 || b[at-1] == '\n' {
				n++
			}
			i += k + len(line)
		}
	}
	up, down := r.up.Bytes(), r.down.Bytes()
	return pingPongs{count(up, "PING"), count(down, "PING"), count(up, "PONG"), count(down, "PONG")}, len(r.conns) / 2
}

func (r *relay) saw(marker string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Contains(r.up.Bytes(), []byte(marker)) || bytes.Contains(r.down.Bytes(), []byte(marker))
}

func (r *relay) url(scheme string) string { return scheme + "://" + r.ln.Addr().String() }

// tlsWorld is a control plane, an agent enrolled and running through a
// relay, and a client calling the API through the same relay.
type tlsWorld struct {
	s         *Server
	relay     *relay
	natsRelay *relay // plaintext only: the native NATS port
	cl        *client.Client
}

func startTLSWorld(t *testing.T, tlsOn bool) *tlsWorld {
	t.Helper()
	cfg := testConfig(t)
	if tlsOn {
		cfg.TLSSelfSigned = []string{"127.0.0.1", "localhost"}
	}
	s := startServer(t, cfg)
	host := strings.TrimPrefix(strings.TrimPrefix(s.URL(), "https://"), "http://")
	w := &tlsWorld{s: s, relay: startRelay(t, host)}
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	w.cl = client.New(w.relay.url(scheme), s.AdminToken())
	if tlsOn {
		w.cl.HTTP = trusting(t, s)
	}
	ctx := context.Background()
	if _, err := w.cl.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	tok, err := w.cl.CreateEnrollmentToken(ctx, "ws1", client.EnrollmentTokenRequest{Agent: "laptop"})
	if err != nil {
		t.Fatal(err)
	}
	ident, err := enroll.Enroll(ctx, w.relay.url(scheme), tok.Token, "", enroll.WithCAPin(tok.CASHA256))
	if err != nil {
		t.Fatalf("enroll through the relay: %v", err)
	}
	if tlsOn {
		// The agent's NATS goes to the same port as the API: through the relay.
		for i, u := range ident.NATSURLs {
			ident.NATSURLs[i] = strings.Replace(u, host, w.relay.ln.Addr().String(), 1)
		}
	} else {
		// Plain NATS has its own port: relay it too.
		nr := startRelay(t, strings.TrimPrefix(ident.NATSURLs[0], "nats://"))
		ident.NATSURLs = []string{nr.url("nats")}
		w.natsRelay = nr
	}
	if !strings.Contains(ident.NATSURLs[0], "127.0.0.1:") || strings.Contains(ident.NATSURLs[0], host) {
		t.Fatalf("the agent would bypass the relay: %v", ident.NATSURLs)
	}
	runAgent(t, s, ident, t.TempDir())
	return w
}

// trusting is an HTTP client that trusts only s's CA.
func trusting(t *testing.T, s *Server) *http.Client {
	t.Helper()
	hc, err := client.TrustingCA(s.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// runAgent runs a real agent with ident until the test ends.
func runAgent(t testing.TB, s *Server, ident *enroll.Config, root string) *agent.Agent {
	t.Helper()
	return runAgentConfig(t, s, agent.Config{Identity: ident, Root: root, HeartbeatInterval: heartbeatEvery})
}

// runAgentConfig runs a real agent with cfg (and the tests' logger) until
// the test ends, once it is online.
func runAgentConfig(t testing.TB, s *Server, cfg agent.Config) *agent.Agent {
	t.Helper()
	cfg.Logger = testLogger()
	ident := cfg.Identity
	a, err := agent.New(cfg)
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
			t.Errorf("agent did not stop")
		}
	})
	waitFor(t, waitLong, "agent online", func() bool { return s.presence.Get(ident.AgentID()).Status == "online" })
	return a
}

// With TLS, a relay on the agent's and the user's links sees none of a
// command's output; without it, the same relay does (so the check can
// fail).
func TestNothingInClearOnTheWire(t *testing.T) {
	for _, tt := range []struct {
		name   string
		tlsOn  bool
		inView bool
	}{
		{"tls: agents over wss on the API's port", true, false},
		{"plaintext: the relay sees it", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := startTLSWorld(t, tt.tlsOn)
			marker := "marker-" + newRecordID("m")
			res, err := w.cl.Agent("ws1", "laptop").Exec(context.Background(), client.ExecRequest{Argv: []string{"echo", marker}})
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(res.Stdout) != marker {
				t.Fatalf("stdout %q, want %q", res.Stdout, marker)
			}
			seen := w.relay.saw(marker) || w.natsRelay != nil && w.natsRelay.saw(marker)
			if got := seen; got != tt.inView {
				t.Fatalf("the relay saw the command's output in clear: %v, want %v", got, tt.inView)
			}
			if tt.tlsOn {
				if !strings.HasPrefix(w.s.NATSURLs()[0], "wss://") || !strings.HasSuffix(w.s.NATSURLs()[0], NATSPath) {
					t.Fatalf("agents are told %v, want wss://...%s", w.s.NATSURLs(), NATSPath)
				}
			}
		})
	}
}

// A wrong pin is refused before anything is sent: the token still works.
func TestEnrollPinsTheCA(t *testing.T) {
	cfg := testConfig(t)
	cfg.TLSSelfSigned = []string{"127.0.0.1"}
	s := startServer(t, cfg)
	cl := client.New(s.URL(), s.AdminToken())
	cl.HTTP = trusting(t, s)
	ctx := context.Background()
	if _, err := cl.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	tok, err := cl.CreateEnrollmentToken(ctx, "ws1", client.EnrollmentTokenRequest{Agent: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tok.CASHA256) != 64 || !strings.Contains(tok.EnrollCommand, "--ca-sha256 "+tok.CASHA256) ||
		!strings.Contains(tok.EnrollCommand, "--url "+s.PublicURL()) || !strings.Contains(tok.EnrollCommand, "--token "+tok.Token) {
		t.Fatalf("token response: caSha256 %q, enrollCommand %q", tok.CASHA256, tok.EnrollCommand)
	}
	wrong := strings.Repeat("ab", 32)
	for _, pin := range []string{wrong, ""} { // "": the system's roots do not know this CA
		if _, err := enroll.Enroll(ctx, s.URL(), tok.Token, "", enroll.WithCAPin(pin)); err == nil {
			t.Fatalf("enroll with pin %q succeeded", pin)
		} else if pin != "" && !errors.Is(err, enroll.ErrCAMismatch) {
			t.Fatalf("enroll with a wrong pin: %v, want ErrCAMismatch", err)
		}
	}
	list, err := cl.ListEnrollmentTokens(ctx, "ws1")
	if err != nil || len(list) != 1 {
		t.Fatalf("the token was spent by a refused enrollment: %v %v", list, err)
	}
	ident, err := enroll.Enroll(ctx, s.URL(), tok.Token, "", enroll.WithCAPin(tok.CASHA256))
	if err != nil {
		t.Fatalf("enroll with the right pin: %v", err)
	}
	if pool, err := ident.CAPool(); err != nil || pool == nil {
		t.Fatalf("the config keeps no CA: %v", err)
	}
}

func TestPlaintextOnlyOnLoopback(t *testing.T) {
	for _, tt := range []struct {
		name               string
		listen, natsListen string
		tls, insecure      bool
		wantErr            bool
	}{
		{name: "loopback", listen: "127.0.0.1:0", natsListen: "127.0.0.1:0"},
		{name: "every interface", listen: "0.0.0.0:0", natsListen: "127.0.0.1:0", wantErr: true},
		{name: "every interface, insecure allowed", listen: "0.0.0.0:0", natsListen: "127.0.0.1:0", insecure: true},
		{name: "nats on every interface", listen: "127.0.0.1:0", natsListen: "0.0.0.0:0", wantErr: true},
		{name: "both on every interface, TLS", listen: "0.0.0.0:0", natsListen: "0.0.0.0:0", tls: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Listen, cfg.NATSListen, cfg.InsecurePlaintext = tt.listen, tt.natsListen, tt.insecure
			if tt.tls {
				cfg.TLSSelfSigned = []string{"127.0.0.1"}
			}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = s.Start(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("Start: %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "--insecure-plaintext") {
				t.Fatalf("error %q does not say how to go on", err)
			}
		})
	}
}

// The self-signed CA is made once: a restart keeps the pin agents hold.
func TestSelfSignedCAKept(t *testing.T) {
	cfg := testConfig(t)
	cfg.TLSSelfSigned = []string{"127.0.0.1"}
	s1 := startServer(t, cfg)
	pin := s1.CASHA256()
	_ = s1.Close()
	cfg.TLSSelfSigned = []string{"127.0.0.1", "outpost.example"} // a new name: a new server certificate, same CA
	s2 := startServer(t, cfg)
	if s2.CASHA256() != pin {
		t.Fatalf("CA changed across a restart: %s -> %s", pin, s2.CASHA256())
	}
	resp, err := trusting(t, s2).Get(s2.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	fi, err := os.Stat(filepath.Join(cfg.StateDir, tlsDir, caKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("CA key mode %v (%v), want 0600", fi.Mode(), err)
	}
	// Plain HTTP to the TLS port gets no API.
	if resp, err := http.Get("http://" + strings.TrimPrefix(s2.URL(), "https://") + "/healthz"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("plain HTTP on the TLS port answered: %s", body)
		}
	}
}
