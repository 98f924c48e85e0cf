package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// portsEnv is a control plane with real agents on this machine; the
// services the tests reach through them listen on loopback here.
type portsEnv struct {
	s     *Server
	token string
	hc    *http.Client // trusts the server's CA; nil: plain HTTP
}

func newPortsEnv(t *testing.T) *portsEnv {
	t.Helper()
	s := startServer(t, testConfig(t))
	if _, err := adminClient(s).CreateWorkspace(context.Background(), "w1"); err != nil {
		t.Fatal(err)
	}
	return &portsEnv{s: s, token: s.AdminToken()}
}

// newPortsEnvTLS is newPortsEnv serving HTTPS, its agents on wss://
// through the API's port.
func newPortsEnvTLS(t *testing.T) *portsEnv {
	t.Helper()
	cfg := testConfig(t)
	cfg.TLSSelfSigned = []string{"127.0.0.1"}
	s := startServer(t, cfg)
	e := &portsEnv{s: s, token: s.AdminToken(), hc: trusting(t, s)}
	if _, err := e.client().CreateWorkspace(context.Background(), "w1"); err != nil {
		t.Fatal(err)
	}
	return e
}

// client is the admin's client of the env.
func (e *portsEnv) client() *client.Client {
	c := adminClient(e.s)
	if e.hc != nil {
		c.HTTP = e.hc
	}
	return c
}

// httpClient is the env's HTTP client.
func (e *portsEnv) httpClient() *http.Client {
	if e.hc != nil {
		return e.hc
	}
	return http.DefaultClient
}

// agent enrolls and runs agent id; stop ends it (a clean stop: goodbye).
func (e *portsEnv) agent(t *testing.T, id string) (stop func()) {
	t.Helper()
	_, stop = e.agentAt(t, id, "")
	return stop
}

// agentAt is agent, with url (when not "") as the control plane's URL the
// agent keeps: where it dials its bulk connections.
func (e *portsEnv) agentAt(t *testing.T, id, url string) (ident *enroll.Config, stop func()) {
	t.Helper()
	if e.hc != nil {
		tok, err := e.client().CreateEnrollmentToken(context.Background(), "w1", client.EnrollmentTokenRequest{Agent: id})
		if err != nil {
			t.Fatal(err)
		}
		if ident, err = enroll.Enroll(context.Background(), e.s.URL(), tok.Token, "", enroll.WithCAPin(tok.CASHA256)); err != nil {
			t.Fatal(err)
		}
	} else {
		ta := enrollAgent(t, e.s, "w1", id)
		ident = &enroll.Config{URL: e.s.URL(), Workspace: "w1", Agent: id, NATSURLs: ta.urls, JWT: ta.jwt, Seed: string(ta.seed)}
	}
	if url != "" {
		ident.URL = url
	}
	a, err := agent.New(agent.Config{Identity: ident, Root: t.TempDir(), HeartbeatInterval: heartbeatEvery, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(waitLong):
				t.Errorf("agent %s did not stop", id)
			}
		})
	}
	t.Cleanup(stop)
	waitFor(t, waitLong, id+" online", func() bool { return e.s.presence.Get(ident.AgentID()).Status == "online" })
	return ident, stop
}

func (e *portsEnv) target(id string) *client.Target { return e.client().Agent("w1", id) }

// get does a request with the admin token (none when auth is false).
func (e *portsEnv) do(t *testing.T, method, url string, body io.Reader, auth bool) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := e.httpClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// dialStream opens a raw TCP stream to port over the WebSocket.
func (e *portsEnv) dialStream(t *testing.T, tgt *client.Target, port int) (*websocket.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	h := http.Header{"Authorization": {"Bearer " + e.token}}
	c, resp, err := websocket.Dial(ctx, e.httpClient(), tgt.PortStreamURL(port), h)
	if err != nil && resp != nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s", err, body)
	}
	return c, err
}

// listen is a TCP listener on loopback serving each connection with h
// until the test ends.
func listen(t *testing.T, h func(net.Conn)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); defer c.Close(); h(c) }()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// freePort is a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return p
}

// echo copies a connection back to itself and half-closes on EOF.
func echo(c net.Conn) {
	_, _ = io.Copy(c, c)
	c.(*net.TCPConn).CloseWrite()
}

// readStream reads a stream's binary messages until its EOF message.
func readStream(ws *websocket.Conn) ([]byte, error) {
	var out []byte
	for {
		op, data, err := ws.ReadMessage()
		if err != nil {
			return out, err
		}
		if op == websocket.OpText {
			if string(data) != websocket.EOFMessage {
				return out, fmt.Errorf("text message %q", data)
			}
			return out, nil
		}
		out = append(out, data...)
	}
}

func TestPortList(t *testing.T) {
	e := newPortsEnv(t)
	e.agent(t, "a1")
	port := listen(t, func(net.Conn) {})
	ports, err := e.target("a1").Ports(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got *wire.Port
	for i := range ports {
		if ports[i].Port == port {
			got = &ports[i]
		}
	}
	if got == nil {
		t.Fatalf("port %d not listed in %+v", port, ports)
	}
	comm, _ := os.ReadFile("/proc/self/comm")
	if got.Address != "127.0.0.1" || got.PID != os.Getpid() || got.Process != strings.TrimSpace(string(comm)) {
		t.Fatalf("listed %+v, want 127.0.0.1 with pid %d (%s)", *got, os.Getpid(), comm)
	}
}

// A real HTTP server through the proxy: path, query, headers, a streamed
// request body, a response streamed (read before the server finishes).
func TestPortProxyHTTP(t *testing.T) {
	e := newPortsEnv(t)
	e.agent(t, "a1")
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/hello/{name}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hi %s q=%s host=%s xfh=%s xfp=%s prefix=%s auth=%q",
			r.PathValue("name"), r.URL.Query().Get("q"), r.Host, r.Header.Get("X-Forwarded-Host"),
			r.Header.Get("X-Forwarded-Proto"), r.Header.Get("X-Forwarded-Prefix"), r.Header.Get("Authorization"))
	})
	mux.HandleFunc("POST /upper", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(bytes.ToUpper(b))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "second\n")
	})
	srv := &http.Server{Handler: mux}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { close(release); srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	base := e.target("a1").PortURL(port)

	resp := e.do(t, "GET", base+"hello/w%20x?q=1", nil, true)
	body, _ := io.ReadAll(resp.Body)
	cpHost := strings.TrimPrefix(e.s.URL(), "http://")
	want := fmt.Sprintf("hi w x q=1 host=127.0.0.1:%d xfh=%s xfp=http prefix=/v1/workspaces/w1/agents/a1/ports/%d/http auth=\"\"", port, cpHost, port)
	if resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("GET = %d %q\nwant 200 %q", resp.StatusCode, body, want)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox ") || strings.Contains(csp, "allow-same-origin") {
		t.Fatalf("Content-Security-Policy %q, want a sandbox without allow-same-origin", csp)
	}

	big := strings.Repeat("abc", 1<<20)
	resp = e.do(t, "POST", base+"upper", strings.NewReader(big), true)
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != strings.ToUpper(big) {
		t.Fatalf("POST = %d, %d bytes; want 200 and %d bytes upper-cased", resp.StatusCode, len(body), len(big))
	}

	resp = e.do(t, "GET", base+"stream", nil, true)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first line = %q, %v (the proxy held the response?)", line, err)
	}

	resp = e.do(t, "GET", e.target("a1").PortURL(freePort(t)), nil, true)
	body, _ = io.ReadAll(resp.Body)
	if code, reason := errorCode(t, body); resp.StatusCode != 502 || code != wire.CodeBadGateway || reason != wire.ReasonConnectionRefused {
		t.Fatalf("nothing listening: %d %s/%s, want 502 bad_gateway/connection_refused", resp.StatusCode, code, reason)
	}
	resp = e.do(t, "GET", base+"hello/x", nil, false)
	if resp.StatusCode != 401 {
		t.Fatalf("without a token: %d, want 401", resp.StatusCode)
	}
}

// wsEchoServer is a WebSocket echo server on loopback.
func wsEchoServer(t *testing.T) int {
	t.Helper()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			op, data, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(op, append([]byte("echo:"), data...)); err != nil {
				return
			}
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func TestPortProxyWebSocket(t *testing.T) {
	e := newPortsEnv(t)
	e.agent(t, "a1")
	port := wsEchoServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	url := e.target("a1").PortURL(port) + "socket"
	c, _, err := websocket.Dial(ctx, http.DefaultClient, url, http.Header{"Authorization": {"Bearer " + e.token}})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	defer c.Close()
	for _, msg := range []string{"one", strings.Repeat("x", 100<<10)} {
		if err := c.WriteMessage(websocket.OpText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		op, data, err := c.ReadMessage()
		if err != nil || op != websocket.OpText || string(data) != "echo:"+msg {
			t.Fatalf("echo = %v %d bytes %v", op, len(data), err)
		}
	}
}

// deadURL is an http:// URL nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	return "http://127.0.0.1:" + fmt.Sprint(freePort(t))
}

// A raw stream: bytes both ways, half-close both ways, a normal close; a
// large download, byte for byte. The stream goes on a bulk connection of
// its own, plain or TLS; an agent that cannot make one (it cannot reach
// the control plane's URL) carries it as frames over NATS instead.
func TestPortStream(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tls, bulk bool
	}{
		{"bulk", false, true},
		{"bulk over TLS", true, true},
		{"NATS fallback", false, false},
		{"NATS fallback over TLS", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPortsEnv
			if tc.tls {
				e = newPortsEnvTLS
			}
			testPortStream(t, e(t), tc.bulk)
		})
	}
}

func testPortStream(t *testing.T, e *portsEnv, bulk bool) {
	url := ""
	if !bulk {
		url = deadURL(t)
	}
	e.agentAt(t, "a1", url)
	before := e.s.bulk.claimed.Load()
	port := listen(t, echo)
	c, err := e.dialStream(t, e.target("a1"), port)
	if err != nil {
		t.Fatal(err)
	}
	msg := bytes.Repeat([]byte("0123456789"), 1<<20)
	go func() {
		for i := 0; i < len(msg); i += 100 << 10 {
			c.WriteMessage(websocket.OpBinary, msg[i:min(i+100<<10, len(msg))])
		}
		c.WriteMessage(websocket.OpText, []byte(websocket.EOFMessage))
	}()
	got, err := readStream(c)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echoed %d of %d bytes, equal %v, err %v", len(got), len(msg), bytes.Equal(got, msg), err)
	}
	if bulk {
		if n := e.s.bulk.claimed.Load() - before; n != 1 {
			t.Fatalf("%d bulk connections for one stream, want 1", n)
		}
	} else {
		if n := e.s.bulk.claimed.Load() - before; n != 0 {
			t.Fatalf("%d bulk connections from an agent that cannot make one", n)
		}
		// The agent acknowledged what the control plane sent it, which
		// paced its frames by that (at most a flight ahead of its
		// requests).
		e.s.pipes.mu.Lock()
		fl := e.s.pipes.flight[subjects.Agent{Workspace: "w1", ID: "a1"}]
		e.s.pipes.mu.Unlock()
		if fl == nil {
			t.Fatal("no flight paces the control plane's frames to the agent (it did not say it acknowledges)")
		}
		if acked := fl.Acked(); acked < int64(len(msg)-wire.PipeAckEvery) {
			t.Fatalf("the agent acknowledged %d of the %d bytes sent to it", acked, len(msg))
		}
	}
	var ce *websocket.CloseError
	if _, _, err := c.ReadMessage(); !errors.As(err, &ce) || ce.Code != websocket.CloseNormal {
		t.Fatalf("after both EOFs: %v, want a normal close", err)
	}

	// A large download from a service that then half-closes: every byte,
	// then the EOF, while the client's side is still open.
	big := pseudoRandom(48<<20, 7)
	src := listen(t, func(c net.Conn) {
		c.Write(big)
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, c)
	})
	d, err := e.dialStream(t, e.target("a1"), src)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n := 0
	for {
		op, data, err := d.ReadMessage()
		if err != nil {
			t.Fatalf("after %d bytes: %v", n, err)
		}
		if op == websocket.OpText {
			if string(data) != websocket.EOFMessage {
				t.Fatalf("text message %q", data)
			}
			break
		}
		h.Write(data)
		n += len(data)
	}
	if want := sha256.Sum256(big); n != len(big) || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("downloaded %d of %d bytes, sha256 %x, want %x", n, len(big), h.Sum(nil), want)
	}
	d.WriteMessage(websocket.OpText, []byte(websocket.EOFMessage))
	if _, _, err := d.ReadMessage(); !errors.As(err, &ce) || ce.Code != websocket.CloseNormal {
		t.Fatalf("after the download and both EOFs: %v, want a normal close", err)
	}
	if bulk {
		if n := e.s.bulk.claimed.Load() - before; n != 2 {
			t.Fatalf("%d bulk connections for two streams, want 2", n)
		}
	}

	if _, err := e.dialStream(t, e.target("a1"), freePort(t)); err == nil || !strings.Contains(err.Error(), "connection_refused") {
		t.Fatalf("stream to a closed port: %v, want connection_refused", err)
	}
	waitFor(t, waitLong, "pipes closed", func() bool { return e.s.pipes.count() == 0 })
}

// A port stream's bulk connection is its own agent's and its own pipe's
// only, as a transfer's: its ticket is refused to another agent's key
// (under either name), to the right key over another ticket, and once
// used; its agent takes it, and the stream's bytes go through it.
func TestPortStreamBulkTicketIsItsAgentsOnly(t *testing.T) {
	e := newPortsEnv(t)
	victim, _ := e.agentAt(t, "a1", "")
	hostile := enrollAgent(t, e.s, "w1", "a2")
	var (
		mu      sync.Mutex
		tickets []string
	)
	e.s.bulk.mu.Lock()
	e.s.bulk.issued = func(ticket string) {
		mu.Lock()
		tickets = append(tickets, ticket)
		mu.Unlock()
		// Before the agent has it: all of these are refused, and leave
		// the ticket to its agent.
		for _, tc := range []struct{ name, ticket, sig string }{
			{"hostile agent's key, its own name", ticket, signBulk(t, hostile.seed, "w1", "a2", ticket)},
			{"hostile agent's key, the victim's name", ticket, signBulk(t, hostile.seed, "w1", "a1", ticket)},
			{"victim's key over another ticket", ticket, signBulk(t, []byte(victim.Seed), "w1", "a1", ticket+"x")},
			{"victim's key, another agent's name", ticket, signBulk(t, []byte(victim.Seed), "w1", "a2", ticket)},
			{"a ticket never issued", ticket + "x", signBulk(t, []byte(victim.Seed), "w1", "a1", ticket+"x")},
		} {
			code, conn, err := tryBulk(e.s, tc.ticket, tc.sig)
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			conn.Close()
			if code != http.StatusUnauthorized {
				t.Errorf("%s: status %d, want 401", tc.name, code)
			}
		}
	}
	e.s.bulk.mu.Unlock()
	before := e.s.bulk.claimed.Load()
	port := listen(t, echo)
	c, err := e.dialStream(t, e.target("a1"), port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.WriteMessage(websocket.OpBinary, []byte("through its own"))
	if _, data, err := c.ReadMessage(); err != nil || string(data) != "through its own" {
		t.Fatalf("echo: %q %v", data, err)
	}
	if n := e.s.bulk.claimed.Load() - before; n != 1 {
		t.Fatalf("%d bulk connections taken, want 1 (the agent's)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tickets) != 1 {
		t.Fatalf("%d tickets issued for one stream", len(tickets))
	}
	if code, _ := dialBulk(t, e.s, tickets[0], signBulk(t, []byte(victim.Seed), "w1", "a1", tickets[0])); code != http.StatusUnauthorized {
		t.Fatalf("the used ticket replayed by its own agent: %d, want 401", code)
	}
}

// TestPortStreamBulkDialHangs: as TestAttachBulkDialHangs for port
// streams: an agent whose way to the control plane's URL holds
// connections carries forwarded connections over NATS, and dials once for
// two of them (the second does not wait for a bulk connection again).
func TestPortStreamBulkDialHangs(t *testing.T) {
	e := newPortsEnv(t)
	url, held := holdingURL(t)
	e.agentAt(t, "a1", url)
	before := e.s.bulk.claimed.Load()
	port := listen(t, echo)
	for i, msg := range []string{"one", "two"} {
		c, err := e.dialStream(t, e.target("a1"), port)
		if err != nil {
			t.Fatalf("stream %d: %v", i+1, err)
		}
		if err := c.WriteMessage(websocket.OpBinary, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		c.WriteMessage(websocket.OpText, []byte(websocket.EOFMessage))
		got, err := readStream(c)
		c.Close()
		if err != nil || string(got) != msg {
			t.Fatalf("stream %d echoed %q, %v; want %q then the EOF", i+1, got, err, msg)
		}
	}
	if n := e.s.bulk.claimed.Load() - before; n != 0 {
		t.Fatalf("%d bulk connections claimed through a route that holds them", n)
	}
	if n := held.Load(); n != 1 {
		t.Fatalf("the agent dialed %d times for two streams, want once (then NATS without trying)", n)
	}
}

// The service goes away mid-stream: the client reads what it sent, then
// a clean end.
func TestPortStreamServerGoesAway(t *testing.T) {
	e := newPortsEnv(t)
	e.agent(t, "a1")
	port := listen(t, func(c net.Conn) {
		c.Write(bytes.Repeat([]byte("z"), 300<<10))
		// and closes, its client's side still open
	})
	c, err := e.dialStream(t, e.target("a1"), port)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readStream(c)
	if err != nil || len(got) != 300<<10 {
		t.Fatalf("read %d bytes then %v; want 300 KiB then the EOF message", len(got), err)
	}
	c.WriteMessage(websocket.OpText, []byte(websocket.EOFMessage))
	var ce *websocket.CloseError
	if _, _, err := c.ReadMessage(); !errors.As(err, &ce) {
		t.Fatalf("after the end: %v, want a close", err)
	}
}

// 50 streams at once, one of whose readers stalls: the other 49 finish,
// the stalled one holds only its own window.
func TestPortStreamsStalledReader(t *testing.T) {
	e := newPortsEnv(t)
	e.agent(t, "a1")
	const n, size = 50, 2 << 20
	payload := bytes.Repeat([]byte("p"), size)
	port := listen(t, func(c net.Conn) {
		c.Write(payload)
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, c)
	})
	stalled, err := e.dialStream(t, e.target("a1"), port)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close() // never read before the others finish
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := e.dialStream(t, e.target("a1"), port)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			got, err := readStream(c)
			if err == nil && len(got) != size {
				err = fmt.Errorf("read %d bytes, want %d", len(got), size)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := e.s.pipes.count(); got < 1 {
		t.Fatalf("the stalled stream's pipe is gone (%d open)", got)
	}
	got, err := readStream(stalled)
	if err != nil || len(got) != size {
		t.Fatalf("the stalled reader, resumed, read %d bytes, %v", len(got), err)
	}
}

// The agent goes offline: new connections answer 503 at once, an open
// stream ends (never hangs).
func TestPortsAgentOffline(t *testing.T) {
	e := newPortsEnv(t)
	stop := e.agent(t, "a1")
	port := listen(t, echo)
	c, err := e.dialStream(t, e.target("a1"), port)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	c.WriteMessage(websocket.OpBinary, []byte("anyone?"))
	ended := make(chan error, 1)
	go func() {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				ended <- err
				return
			}
		}
	}()
	select {
	case err := <-ended:
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code == websocket.CloseNormal {
			t.Fatalf("stream ended with %v, want an abnormal close", err)
		}
	case <-time.After(waitLong):
		t.Fatal("the stream hangs after its agent went away")
	}
	resp := e.do(t, "GET", e.target("a1").PortURL(port), nil, true)
	body, _ := io.ReadAll(resp.Body)
	if code, _ := errorCode(t, body); resp.StatusCode != 503 || code != wire.CodeUnavailable {
		t.Fatalf("proxy to an offline agent: %d %s, want 503", resp.StatusCode, body)
	}
	if _, err := e.dialStream(t, e.target("a1"), port); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("stream to an offline agent: %v, want 503", err)
	}
}

func TestPreviewLinks(t *testing.T) {
	e := newPortsEnv(t)
	e.agent(t, "a1")
	port := listen(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(r)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			body := "page " + req.URL.Path
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nService-Worker-Allowed: /\r\n\r\n%s", len(body), body)
		}
	})
	ctx := context.Background()
	tgt := e.target("a1")
	link, err := tgt.CreateLink(ctx, port, client.CreateLinkRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link.URL, e.s.URL()+"/preview/") || time.Until(link.ExpiresAt) < 59*time.Minute {
		t.Fatalf("link %+v", link)
	}
	resp := e.do(t, "GET", link.URL+"/a/b", nil, false)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "page /a/b" {
		t.Fatalf("GET link/a/b = %d %q", resp.StatusCode, body)
	}
	if resp.Header.Get("Service-Worker-Allowed") != "" || !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("headers %v: want the sandbox and no Service-Worker-Allowed", resp.Header)
	}

	forbidden := func(url, reason string) {
		t.Helper()
		resp := e.do(t, "GET", url, nil, false)
		body, _ := io.ReadAll(resp.Body)
		if code, r := errorCode(t, body); resp.StatusCode != 403 || code != wire.CodePermissionDenied || r != reason {
			t.Fatalf("GET %s = %d %s/%s, want 403 %s", url, resp.StatusCode, code, r, reason)
		}
	}
	tampered := []byte(link.URL)
	last := len(tampered) - 1
	tampered[last] = map[bool]byte{true: 'b', false: 'a'}[tampered[last] == 'a']
	forbidden(string(tampered)+"/", wire.ReasonLinkInvalid)
	forbidden(e.s.URL()+"/preview/short/", wire.ReasonLinkInvalid)

	links, err := tgt.Links(ctx, port)
	if err != nil || len(links) != 1 || links[0].ID != link.ID || links[0].URL != link.URL {
		t.Fatalf("Links = %+v, %v", links, err)
	}
	if other, err := tgt.Links(ctx, port+1); err != nil || len(other) != 0 {
		t.Fatalf("links of another port: %+v, %v", other, err)
	}
	if err := tgt.DeleteLink(ctx, port, link.ID); err != nil {
		t.Fatal(err)
	}
	forbidden(link.URL+"/", wire.ReasonLinkInvalid)

	short, err := tgt.CreateLink(ctx, port, client.CreateLinkRequest{TTLSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitLong, "the link expires", func() bool { return time.Now().After(short.ExpiresAt) })
	forbidden(short.URL+"/", wire.ReasonLinkExpired)

	if _, err := tgt.CreateLink(ctx, port, client.CreateLinkRequest{TTLSeconds: 8 * 24 * 3600}); !errors.Is(err, wire.ErrInvalidArgument) {
		t.Fatalf("a link for 8 days: %v, want invalid_argument", err)
	}
}

// A preview link of a session ends with the session: once it is deleted
// the link is 403 link_invalid, and a session made again under the same
// id does not revive it, even when its link records were left behind.
func TestPreviewLinkEndsWithItsSession(t *testing.T) {
	e := newPortsEnv(t)
	e.agent(t, "a1")
	ctx := context.Background()
	cl := adminClient(e.s)
	create := func() {
		t.Helper()
		if _, err := cl.CreateSession(ctx, "w1", client.CreateSessionRequest{ID: "s1", Active: "one", Backends: map[string]client.SessionBackend{
			"one": {Kind: "agent", Agent: "a1"},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	port := listen(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(r)
			if err != nil {
				return
			}
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(req.URL.Path), req.URL.Path)
		}
	})
	get := func(url string) (int, string) {
		t.Helper()
		resp := e.do(t, "GET", url, nil, false)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == 200 {
			return 200, string(body)
		}
		_, reason := errorCode(t, body)
		return resp.StatusCode, reason
	}
	create()
	sess := cl.Session("w1", "s1")
	link, err := sess.CreateLink(ctx, port, client.CreateLinkRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(link.URL + "/x"); code != 200 || body != "/x" {
		t.Fatalf("GET through the session's link = %d %q", code, body)
	}
	if err := cl.DeleteSession(ctx, "w1", "s1"); err != nil {
		t.Fatal(err)
	}
	if code, reason := get(link.URL + "/x"); code != 403 || reason != wire.ReasonLinkInvalid {
		t.Fatalf("after the session's delete: %d %s, want 403 %s", code, reason, wire.ReasonLinkInvalid)
	}
	create()
	if code, reason := get(link.URL + "/x"); code != 403 || reason != wire.ReasonLinkInvalid {
		t.Fatalf("the session made again: %d %s, want 403 %s", code, reason, wire.ReasonLinkInvalid)
	}
	if links, err := sess.Links(ctx, port); err != nil || len(links) != 0 {
		t.Fatalf("links of the new session: %+v, %v; want none", links, err)
	}

	// A delete that left the link's record behind (the router's own,
	// as a crash between the two would): the new session's UID differs.
	left, err := sess.CreateLink(ctx, port, client.CreateLinkRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.s.sessions.Session("w1", "s1").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	create()
	if code, reason := get(left.URL + "/x"); code != 403 || reason != wire.ReasonLinkInvalid {
		t.Fatalf("a link left behind, its session made again: %d %s, want 403 %s", code, reason, wire.ReasonLinkInvalid)
	}
}

// Through a session: a stream goes to the active backend; a swap ends it
// cleanly and the next goes to the new backend.
func TestPortsSessionSwap(t *testing.T) {
	e := newPortsEnv(t)
	e.agent(t, "a1")
	e.agent(t, "a2")
	ctx := context.Background()
	cl := adminClient(e.s)
	if _, err := cl.CreateSession(ctx, "w1", client.CreateSessionRequest{ID: "s1", Active: "one", Backends: map[string]client.SessionBackend{
		"one": {Kind: "agent", Agent: "a1"}, "two": {Kind: "agent", Agent: "a2"},
	}}); err != nil {
		t.Fatal(err)
	}
	port := listen(t, echo)
	sess := cl.Session("w1", "s1")
	pipeAgents := func() []string {
		e.s.pipes.mu.Lock()
		defer e.s.pipes.mu.Unlock()
		var out []string
		for _, p := range e.s.pipes.open {
			p.mu.Lock()
			out = append(out, p.agent)
			p.mu.Unlock()
		}
		return out
	}
	c, err := e.dialStream(t, sess, port)
	if err != nil {
		t.Fatal(err)
	}
	if got := pipeAgents(); len(got) != 1 || got[0] != "a1" {
		t.Fatalf("pipes go to %v, want [a1]", got)
	}
	c.WriteMessage(websocket.OpBinary, []byte("before"))
	if op, data, err := c.ReadMessage(); err != nil || op != websocket.OpBinary || string(data) != "before" {
		t.Fatalf("echo before the swap: %q %v", data, err)
	}
	if _, err := cl.SwapSession(ctx, "w1", "s1", "two", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := readStream(c); err != nil {
		t.Fatalf("after the swap the stream should end with an EOF: %v", err)
	}
	c.WriteMessage(websocket.OpText, []byte(websocket.EOFMessage))
	var ce *websocket.CloseError
	if _, _, err := c.ReadMessage(); !errors.As(err, &ce) || ce.Code != websocket.CloseNormal {
		t.Fatalf("the moved stream closed with %v, want a normal close", err)
	}
	waitFor(t, waitLong, "old pipe gone", func() bool { return len(pipeAgents()) == 0 })
	c2, err := e.dialStream(t, sess, port)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := pipeAgents(); len(got) != 1 || got[0] != "a2" {
		t.Fatalf("after the swap pipes go to %v, want [a2]", got)
	}
}

// The owner's ports allow-list: a port outside it is 403 policy, through
// the proxy and the stream alike; a port in it works.
func TestPortsPolicy(t *testing.T) {
	s := startServer(t, testConfig(t))
	open := listen(t, echo)
	closed := listen(t, echo)
	_, prefix := policyAgent(t, s, "a1", t.TempDir(), fmt.Sprintf(`{"ports":[%d]}`, open))
	e := &portsEnv{s: s, token: s.AdminToken()}
	tgt := adminClient(s).Agent("ws1", "a1")
	resp := e.do(t, "GET", s.URL()+prefix+fmt.Sprintf("/ports/%d/http/", closed), nil, true)
	body, _ := io.ReadAll(resp.Body)
	if code, reason := errorCode(t, body); resp.StatusCode != 403 || code != wire.CodePermissionDenied || reason != wire.ReasonPolicy {
		t.Fatalf("proxy to a port outside the policy: %d %s/%s, want 403 permission_denied/policy", resp.StatusCode, code, reason)
	}
	if _, err := e.dialStream(t, tgt, closed); err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "policy") {
		t.Fatalf("stream to a port outside the policy: %v, want 403 policy", err)
	}
	c, err := e.dialStream(t, tgt, open)
	if err != nil {
		t.Fatalf("stream to a port in the policy: %v", err)
	}
	defer c.Close()
	c.WriteMessage(websocket.OpBinary, []byte("ok"))
	if _, data, err := c.ReadMessage(); err != nil || string(data) != "ok" {
		t.Fatalf("echo through an allowed port: %q %v", data, err)
	}
}
