// Package proxied runs the whole system through a real HTTP forward proxy
// (Debian's tinyproxy), as on a network whose only way out is a proxy: a real
// control plane, the SDK and enrollment over HTTP through it, and a real
// agent whose NATS connection is a CONNECT tunnel through it.
//
// Everything is on loopback, which the environment's proxy settings never
// apply to (net/http's rule), so the tests name the proxy explicitly with
// proxy.Fixed; production reads HTTPS_PROXY, HTTP_PROXY and NO_PROXY.
package proxied

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/tinyproxy"
	"github.com/outposthq/outpost/proxy"
)

// Fixed waits: generous, so a loaded machine does not flake.
const (
	waitLong  = 15 * time.Second
	pollEvery = 20 * time.Millisecond
)

// world is a control plane on loopback with one workspace.
type world struct {
	cp       *controlplane.Server
	httpAddr string // host:port of the API
	natsAddr string // host:port of NATS
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.New(controlplane.Config{
		Listen: "127.0.0.1:0", NATSListen: "127.0.0.1:0", StateDir: dir,
		Logger: slog.New(slog.DiscardHandler), PresenceWindow: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := cp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Close() })
	w := &world{cp: cp, httpAddr: hostPort(t, cp.URL()), natsAddr: hostPort(t, cp.NATSURLs()[0])}
	if _, err := client.New(cp.URL(), cp.AdminToken()).CreateWorkspace(ctx, "ws"); err != nil {
		t.Fatal(err)
	}
	return w
}

func hostPort(t testing.TB, s string) string {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil || u.Port() == "" {
		t.Fatalf("url %q: %v", s, err)
	}
	return u.Host
}

// admin is an admin SDK client whose requests go through the proxy pick
// chooses, as the CLI's do through the environment's.
func (w *world) admin(t *testing.T, pick proxy.Func) *client.Client {
	t.Helper()
	// tinyproxy answers plain-HTTP requests as HTTP/1.1 without
	// "Connection: close" and then closes the connection; a POST sent on it
	// meanwhile fails with EOF (net/http retries only idempotent requests).
	// Through a CONNECT tunnel (https://, as in production) that cannot
	// happen; here the API is plain HTTP, so each request has its own
	// connection.
	tr := &http.Transport{Proxy: pick, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	c := client.New(w.cp.URL(), w.cp.AdminToken())
	c.HTTP = &http.Client{Transport: tr}
	return c
}

// runAgent enrolls an agent named id through pick and runs it with its NATS
// connection through pick, until the test ends; it waits for it online.
func (w *world) runAgent(t *testing.T, admin *client.Client, id string, pick proxy.Func) {
	t.Helper()
	ctx := tctx(t)
	tok, err := admin.CreateEnrollmentToken(ctx, "ws", client.EnrollmentTokenRequest{Agent: id})
	if err != nil {
		t.Fatal(err)
	}
	ident, err := enroll.Enroll(ctx, w.cp.URL(), tok.Token, "", enroll.WithProxy(pick))
	if err != nil {
		t.Fatalf("enroll through the proxy: %v", err)
	}
	a, err := agent.New(agent.Config{
		Identity: ident, Root: t.TempDir(), HeartbeatInterval: 200 * time.Millisecond,
		Logger:      slog.New(slog.DiscardHandler),
		NATSOptions: []nats.Option{agent.NATSProxy(pick, ident.NATSURLs)},
		Proxy:       pick,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitLong):
			t.Errorf("agent %s did not stop", id)
		}
	})
	waitFor(t, id+" online", func() bool {
		ag, err := admin.GetAgent(ctx, "ws", id)
		return err == nil && ag.Status == "online"
	})
}

// execEcho runs echo on the agent through the control plane.
func execEcho(t *testing.T, admin *client.Client, id, word string) {
	t.Helper()
	res, err := admin.Agent("ws", id).Exec(tctx(t), client.ExecRequest{Argv: []string{"echo", word}})
	if err != nil {
		t.Fatalf("exec on %s: %v", id, err)
	}
	if res.ExitCode != 0 || res.Stdout != word+"\n" {
		t.Fatalf("exec on %s: exit %d stdout %q, want %q", id, res.ExitCode, res.Stdout, word+"\n")
	}
}

// Everything through one proxy: the SDK's calls, enrollment, and the
// agent's NATS connection; a command runs end to end.
func TestEverythingThroughProxy(t *testing.T) {
	w := newWorld(t)
	p := tinyproxy.Start(t, tinyproxy.Options{})
	pick := proxy.Fixed(p.URL, "")
	admin := w.admin(t, pick)

	w.runAgent(t, admin, "laptop", pick)
	execEcho(t, admin, "laptop", "through-the-proxy")
	bigFile(t, admin, "laptop")

	api := "http://" + w.httpAddr
	for _, want := range []struct{ method, target string }{
		{"POST", api + "/v1/workspaces/ws/enrollment-tokens"}, // the SDK
		{"POST", api + "/v1/enroll"},                          // enrollment
		{"CONNECT", w.natsAddr},                               // the agent's NATS
		{"CONNECT", w.httpAddr},                               // its bulk connections
		{"POST", api + "/v1/workspaces/ws/agents/laptop/exec"},
	} {
		if n := p.Count(want.method, want.target); n < 1 {
			t.Errorf("tinyproxy logged no %s %s; requests %q", want.method, want.target, p.Requests())
		}
	}
	if n := p.Count("CONNECT", w.natsAddr); n != 1 {
		t.Errorf("tinyproxy logged %d CONNECTs to NATS, want the agent's one; requests %q", n, p.Requests())
	}
}

// A proxy that allows CONNECT to one port only, as those that allow 443:
// the agent connects through it to that port, and CONNECT to any other is
// refused with the proxy's status in the error.
func TestProxyAllowingOnePort(t *testing.T) {
	w := newWorld(t)
	_, port, _ := net.SplitHostPort(w.natsAddr)
	n, _ := strconv.Atoi(port)
	p := tinyproxy.Start(t, tinyproxy.Options{ConnectPorts: []int{n}})
	pick := proxy.Fixed(p.URL, "")
	admin := w.admin(t, pick)

	w.runAgent(t, admin, "laptop", pick)
	execEcho(t, admin, "laptop", "one-port")
	if got := p.Count("CONNECT", w.natsAddr); got != 1 {
		t.Errorf("tinyproxy logged %d CONNECTs to NATS, want 1; requests %q", got, p.Requests())
	}

	d := &proxy.Dialer{Proxy: pick}
	c, err := d.DialContext(tctx(t), "tcp", w.httpAddr)
	if err == nil {
		c.Close()
		t.Fatalf("CONNECT to %s went through a proxy that allows port %d only", w.httpAddr, n)
	}
	var re *proxy.RefusedError
	if !errors.As(err, &re) || re.StatusCode != http.StatusForbidden || re.Target != w.httpAddr {
		t.Fatalf("got %v, want the proxy's 403 for %s", err, w.httpAddr)
	}
	t.Logf("refused as it should be: %v", err)
}

// NO_PROXY: hosts it names go around the proxy, for the SDK, enrollment
// and the agent alike.
func TestNoProxyGoesAround(t *testing.T) {
	w := newWorld(t)
	p := tinyproxy.Start(t, tinyproxy.Options{})
	pick := proxy.Fixed(p.URL, "127.0.0.1")
	admin := w.admin(t, pick)

	w.runAgent(t, admin, "laptop", pick)
	execEcho(t, admin, "laptop", "around-the-proxy")
	if reqs := p.Requests(); len(reqs) != 0 {
		t.Errorf("tinyproxy got %q, want nothing: NO_PROXY names the control plane", reqs)
	}
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	t.Cleanup(cancel)
	return ctx
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(pollEvery)
	}
}

// bigFile uploads and downloads a file large enough for bulk connections
// (the agent dials the control plane for each) and compares the bytes.
func bigFile(t *testing.T, admin *client.Client, id string) {
	t.Helper()
	ctx := tctx(t)
	data := make([]byte, 24<<20+7)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	tgt := admin.Agent("ws", id)
	if _, err := tgt.Put(ctx, "big.bin", bytes.NewReader(data), int64(len(data)), client.PutOptions{}); err != nil {
		t.Fatalf("upload: %v", err)
	}
	f, err := tgt.Get(ctx, "big.bin")
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	got, err := io.ReadAll(f.Body)
	f.Body.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("downloaded %d bytes (%v), want %d", len(got), err, len(data))
	}
}
