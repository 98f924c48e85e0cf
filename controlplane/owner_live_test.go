package controlplane

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent/policy"
	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/wire"
)

// result is an HTTP call's status and body, from a goroutine.
type result struct {
	status int
	body   []byte
	err    error
}

// callAsync runs call in the background.
func callAsync(t *testing.T, s *Server, method, path string, body any) <-chan result {
	ch := make(chan result, 1)
	go func() {
		status, b := call(t, s, method, path, s.AdminToken(), body)
		ch <- result{status: status, body: b}
	}()
	return ch
}

// streamingPut starts a PUT of the file at path whose body the test
// writes to the returned writer.
func streamingPut(t *testing.T, s *Server, path string) (*io.PipeWriter, <-chan result) {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequest("PUT", s.URL()+path, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.AdminToken())
	ch := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		ch <- result{status: resp.StatusCode, body: b}
	}()
	t.Cleanup(func() { pw.CloseWithError(errors.New("test over")) })
	return pw, ch
}

// within waits for r up to waitLong.
func within(t *testing.T, what string, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitLong):
		t.Fatalf("%s: no answer within %s", what, waitLong)
		return result{}
	}
}

// temps are the temporary files of writes under way in dir.
func temps(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, ".outpost-tmp-*"))
	return m
}

// wantError checks an HTTP error body's status, code and reason (and
// that it names rule, when given).
func wantError(t *testing.T, what string, r result, status int, code wire.Code, reason, rule string) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: %v", what, r.err)
	}
	c, rs := errorCode(t, r.body)
	if r.status != status || c != code || rs != reason || (rule != "" && !strings.Contains(string(r.body), `rule \"`+rule+`\"`)) {
		t.Fatalf("%s: %d %s, want %d %s/%s %s", what, r.status, r.body, status, code, reason, rule)
	}
}

// sleeper is an exec that writes its pid to pidfile and sleeps 30 s.
func sleeper(pidfile string) map[string]any {
	return map[string]any{"argv": []string{"sh", "-c", "echo $$ > " + pidfile + "; exec sleep 30"}, "timeoutMs": 60000}
}

// waitPid reads the pid a sleeper wrote.
func waitPid(t *testing.T, pidfile string) int {
	t.Helper()
	var pid int
	waitFor(t, waitLong, "the command started", func() bool {
		b, err := os.ReadFile(pidfile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// waitGone waits until pid is no process.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	waitFor(t, waitLong, "the command killed", func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	})
}

// echoConn serves an echo and reports when its connection ended.
func echoConn(t *testing.T) (port int, closed <-chan struct{}) {
	ch := make(chan struct{}, 16)
	port = listen(t, func(c net.Conn) {
		io.Copy(c, c)
		ch <- struct{}{}
	})
	return port, ch
}

// openEcho opens a port stream to port through the agent at prefix and
// checks that it echoes.
func openEcho(t *testing.T, s *Server, id string, port int) *websocket.Conn {
	t.Helper()
	e := &portsEnv{s: s, token: s.AdminToken()}
	c, err := e.dialStream(t, adminClient(s).Agent("ws1", id), port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.WriteMessage(websocket.OpBinary, []byte("ping"))
	if _, data, err := c.ReadMessage(); err != nil || string(data) != "ping" {
		t.Fatalf("echo: %q %v", data, err)
	}
	return c
}

// streamEnds checks that a port stream ends (closed or EOF) within
// waitLong and that the local service saw its connection end.
func streamEnds(t *testing.T, what string, c *websocket.Conn, closed <-chan struct{}) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for {
			op, data, err := c.ReadMessage()
			if err != nil {
				done <- err
				return
			}
			if op == websocket.OpText && string(data) == websocket.EOFMessage {
				done <- nil
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(waitLong):
		t.Fatalf("%s: the port stream is still open", what)
	}
	select {
	case <-closed:
	case <-time.After(waitLong):
		t.Fatalf("%s: the local service's connection is still open", what)
	}
}

// Pausing stops everything under way at once: a port stream ends (the
// local service sees its connection close), an exec in flight answers
// agent_paused and its process is killed, an upload in flight is aborted
// (no temporary file is left), and a download handle is closed; after the
// resume, new work runs.
func TestPauseEndsWorkUnderWay(t *testing.T) {
	s := startServer(t, testConfig(t))
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "data"), 0o755)
	os.WriteFile(filepath.Join(root, "data", "big"), bytes.Repeat([]byte("x"), 64<<20), 0o644)
	a, prefix := policyAgent(t, s, "livepause", root, `{}`)

	port, closed := echoConn(t)
	stream := openEcho(t, s, "livepause", port)
	pidfile := filepath.Join(t.TempDir(), "pid")
	execDone := callAsync(t, s, "POST", prefix+"/exec", sleeper(pidfile))
	pid := waitPid(t, pidfile)
	up, putDone := streamingPut(t, s, q(prefix+"/fs/file", "path", "data/new"))
	up.Write(bytes.Repeat([]byte("u"), 3<<20))
	waitFor(t, waitLong, "the upload under way", func() bool { return len(temps(filepath.Join(root, "data"))) > 0 })
	down := downloadStarted(t, s, q(prefix+"/fs/file", "path", "data/big"))

	start := time.Now()
	a.Pause()
	wantError(t, "exec in flight", within(t, "exec", execDone), 503, wire.CodeUnavailable, wire.ReasonAgentPaused, "")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the exec answered %s after the pause", d)
	}
	waitGone(t, pid)
	streamEnds(t, "paused", stream, closed)
	waitFor(t, waitLong, "the upload's temporary file removed", func() bool { return len(temps(filepath.Join(root, "data"))) == 0 })
	up.Write(bytes.Repeat([]byte("u"), 1<<20))
	up.Close()
	r := within(t, "upload", putDone)
	if r.status == 200 {
		t.Fatalf("the upload went on through the pause: %s", r.body)
	}
	if n := down.rest(t); n >= 64<<20 {
		t.Errorf("the download went on through the pause: %d bytes", n)
	}
	if _, err := os.Stat(filepath.Join(root, "data", "new")); err == nil {
		t.Error("the upload cut by the pause wrote its file")
	}
	e := &portsEnv{s: s, token: s.AdminToken()}
	if _, err := e.dialStream(t, adminClient(s).Agent("ws1", "livepause"), port); err == nil || !strings.Contains(err.Error(), "agent_paused") {
		t.Fatalf("a port stream while paused: %v, want agent_paused", err)
	}

	a.Resume()
	if status, body := call(t, s, "POST", prefix+"/exec", s.AdminToken(), map[string]any{"argv": []string{"true"}}); status != 200 {
		t.Fatalf("exec after resume: %d %s", status, body)
	}
	openEcho(t, s, "livepause", port)
}

// download is a GET of a file whose body the test has started to read.
type download struct {
	resp *http.Response
	read int64
}

// downloadStarted starts a download and reads its first bytes, so that
// the agent holds the file open under a handle.
func downloadStarted(t *testing.T, s *Server, path string) *download {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL()+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("download: %d %s", resp.StatusCode, b)
	}
	buf := make([]byte, 1024)
	n, err := io.ReadFull(resp.Body, buf)
	if err != nil {
		t.Fatalf("download's first bytes: %v", err)
	}
	return &download{resp: resp, read: int64(n)}
}

// rest reads the rest of the download and returns the bytes it gave in all.
func (d *download) rest(t *testing.T) int64 {
	t.Helper()
	n, _ := io.Copy(io.Discard, d.resp.Body)
	return d.read + n
}

// reload writes text to the agent's policy file and reloads it.
func reload(t *testing.T, pf *policy.File, text string) {
	t.Helper()
	if err := os.WriteFile(pf.Path(), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := pf.Reload(); err != nil {
		t.Fatal(err)
	}
}

// A reload ends the work under way that the new policy refuses, as it
// would refuse it now: a download and an upload of a path now denied
// (their next call is 403 policy naming denyPaths), a watch of one (an
// error event naming the rule), an exec once exec is off (403 naming exec,
// its process killed), a port stream to a port no longer listed. Work the
// new policy allows goes on.
func TestPolicyReloadEndsWorkItForbids(t *testing.T) {
	s := startServer(t, testConfig(t))
	root := t.TempDir()
	for _, d := range []string{"data", "watched", "ok"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "data", "big"), bytes.Repeat([]byte("x"), 64<<20), 0o644)
	os.WriteFile(filepath.Join(root, "ok", "big"), bytes.Repeat([]byte("y"), 8<<20), 0o644)
	port, closed := echoConn(t)
	otherPort, _ := echoConn(t)
	_, prefix, _, pf := policyAgentFile(t, s, "livereload", root, fmt.Sprintf(`{"ports": [%d, %d]}`, port, otherPort))

	stream := openEcho(t, s, "livereload", port)
	keptStream := openEcho(t, s, "livereload", otherPort)
	down := downloadStarted(t, s, q(prefix+"/fs/file", "path", "data/big"))
	keptDown := downloadStarted(t, s, q(prefix+"/fs/file", "path", "ok/big"))
	up, putDone := streamingPut(t, s, q(prefix+"/fs/file", "path", "data/new"))
	up.Write(bytes.Repeat([]byte("u"), 3<<20))
	waitFor(t, waitLong, "the upload under way", func() bool { return len(temps(filepath.Join(root, "data"))) > 0 })
	watch := watchStarted(t, s, q(prefix+"/fs/watch", "path", "watched"))
	pidfile := filepath.Join(t.TempDir(), "pid")
	execDone := callAsync(t, s, "POST", prefix+"/exec", sleeper(pidfile))
	pid := waitPid(t, pidfile)

	reload(t, pf, fmt.Sprintf(`{"denyPaths": ["data", "watched"], "ports": [%d]}`, otherPort))
	up.Write(bytes.Repeat([]byte("u"), 1<<20))
	up.Close()
	wantError(t, "upload of a path now denied", within(t, "upload", putDone), 403, wire.CodePermissionDenied, wire.ReasonPolicy, "denyPaths")
	if len(temps(filepath.Join(root, "data"))) != 0 {
		t.Error("the upload cut by the reload left its temporary file")
	}
	if n := down.rest(t); n >= 64<<20 {
		t.Errorf("the download of a path now denied went on: %d bytes", n)
	}
	if n := keptDown.rest(t); n != 8<<20 {
		t.Errorf("the download of an allowed path gave %d bytes, want all %d", n, 8<<20)
	}
	if ev := watch.errorEvent(t); !strings.Contains(ev, "policy") || !strings.Contains(ev, `denyPaths`) {
		t.Errorf("watch of a path now denied: error event %q, want policy naming denyPaths", ev)
	}
	streamEnds(t, "port no longer listed", stream, closed)
	keptStream.WriteMessage(websocket.OpBinary, []byte("still"))
	if _, data, err := keptStream.ReadMessage(); err != nil || string(data) != "still" {
		t.Fatalf("the stream to a port still listed: %q %v", data, err)
	}
	select {
	case r := <-execDone:
		t.Fatalf("the exec, still allowed, ended: %d %s", r.status, r.body)
	default:
	}

	reload(t, pf, fmt.Sprintf(`{"exec": false, "ports": [%d]}`, otherPort))
	wantError(t, "exec in flight once exec is off", within(t, "exec", execDone), 403, wire.CodePermissionDenied, wire.ReasonPolicy, "exec")
	waitGone(t, pid)
}

// sse is a watch's event stream being read.
type sse struct {
	lines chan string
}

// watchStarted opens a watch's event stream.
func watchStarted(t *testing.T, s *Server, path string) *sse {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL()+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("watch: %d %s", resp.StatusCode, b)
	}
	w := &sse{lines: make(chan string, 64)}
	go func() {
		defer close(w.lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
	}()
	return w
}

// errorEvent waits for the stream's error event and returns its data.
func (w *sse) errorEvent(t *testing.T) string {
	t.Helper()
	timeout := time.After(waitLong)
	isErr := false
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				t.Fatal("the watch's stream ended without an error event")
			}
			if l == "event: error" {
				isErr = true
			} else if d, ok := strings.CutPrefix(l, "data: "); ok && isErr {
				return d
			}
		case <-timeout:
			t.Fatal("no error event on the watch's stream")
		}
	}
}
