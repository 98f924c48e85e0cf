package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/internal/websocket"
)

// serveLoopback serves h on a loopback port until the test ends.
func serveLoopback(t *testing.T, h http.Handler) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

var forwardingRE = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) to port (\d+)`)

// portForward runs `outpost port-forward 0:REMOTE` and returns the local
// address once it listens.
func (e *agentEnv) portForward(t *testing.T, remote int) (*proc, string) {
	t.Helper()
	p := startProc(t, []string{"OUTPOST_URL=" + e.cp.url, "OUTPOST_TOKEN=" + adminToken, "OUTPOST_WORKSPACE=" + e.ws},
		"port-forward", "--agent", e.id, fmt.Sprintf("0:%d", remote))
	var local string
	waitFor(t, 15*time.Second, "port-forward listening", func() error {
		m := forwardingRE.FindStringSubmatch(p.output())
		if m == nil {
			return fmt.Errorf("output so far: %q", p.output())
		}
		local = "127.0.0.1:" + m[1]
		return nil
	})
	return p, local
}

// A real HTTP server and a real WebSocket echo on the agent's machine,
// through `outpost port-forward`, several connections at once.
func TestPortForward(t *testing.T) {
	e := newAgentEnv(t)
	web := serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s from %s", r.URL.Path, r.Host)
	}))
	echo := serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
			if c.WriteMessage(op, append([]byte("echo:"), data...)) != nil {
				return
			}
		}
	}))

	pf, local := e.portForward(t, web)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 15 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := hc.Get(fmt.Sprintf("http://%s/p%d", local, i))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if want := fmt.Sprintf("hello /p%d from %s", i, local); string(body) != want {
				errs <- fmt.Errorf("GET /p%d = %q, want %q", i, body, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	_, wsLocal := e.portForward(t, echo)
	c, _, err := websocket.Dial(ctx(t), nil, "ws://"+wsLocal+"/", nil)
	if err != nil {
		t.Fatalf("websocket through port-forward: %v", err)
	}
	for _, msg := range []string{"hi", strings.Repeat("y", 200<<10)} {
		if err := c.WriteMessage(websocket.OpBinary, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if _, data, err := c.ReadMessage(); err != nil || string(data) != "echo:"+msg {
			t.Fatalf("echo of %d bytes: %d bytes, %v", len(msg), len(data), err)
		}
	}
	c.Close()

	// Nothing listening: the local connection closes, stderr says why.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	deadPF, dead := e.portForward(t, closed)
	conn, err := net.Dial("tcp", dead)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes from a forward to a closed port", n)
	}
	conn.Close()
	waitFor(t, 15*time.Second, "connection_refused on stderr", func() error {
		if !strings.Contains(deadPF.output(), "connection_refused") {
			return fmt.Errorf("output: %q", deadPF.output())
		}
		return nil
	})
	pf.stop()
}
