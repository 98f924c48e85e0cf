package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/wire"
)

// attachEvents reads an attach WebSocket until it closes: output (binary
// frames and stderr "output" frames), the exit code, the last seq and the
// close status.
type attachEvents struct {
	stdout, stderr strings.Builder
	exitCode       *int
	seq            uint64
	closeCode      int
}

func readAttach(t testing.TB, c *websocket.Conn) attachEvents {
	t.Helper()
	var ev attachEvents
	stop := time.AfterFunc(waitLong, func() { c.Close() })
	defer stop.Stop()
	for {
		op, p, err := c.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			ev.closeCode = ce.Code
			return ev
		}
		if err != nil {
			t.Fatalf("attach read: %v (so far %+v)", err, ev)
		}
		if op == websocket.OpBinary {
			ev.stdout.Write(p)
			continue
		}
		var m attachControl
		if err := json.Unmarshal(p, &m); err != nil {
			t.Fatalf("control frame %q: %v", p, err)
		}
		switch m.Type {
		case "output":
			ev.stderr.Write(m.Data)
		case "exit":
			ev.exitCode = m.ExitCode
		case "seq":
			ev.seq = m.Seq
		case "error":
			t.Fatalf("error frame: %+v", m.Error)
		}
	}
}

// TestAttach drives a real process through the attach WebSocket: stdin in,
// stdout and stderr out, the exit code, a normal close after closed; a
// second attach resumes after the last seq; a ticket opens it once
// without the Authorization header.
func TestAttach(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	if _, err := adminClient(s).CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	tgt := realAgent(t, s, "w1", "a1", t.TempDir())
	waitFor(t, waitLong, "a1 online", func() bool {
		_, err := tgt.ListProcesses(ctx)
		return err == nil
	})
	st, err := tgt.StartProcess(ctx, client.StartProcessRequest{
		ID: "p1", Command: `read line; echo "got:$line"; echo oops >&2; exit 3`, Stdin: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	cl := adminClient(s)
	c, _, err := websocket.Dial(ctx, cl.HTTPClient(), tgt.AttachURL(st.ID, 0), cl.AuthHeader())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if err := c.WriteMessage(websocket.OpBinary, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	ev := readAttach(t, c)
	if ev.stdout.String() != "got:hello\n" || ev.stderr.String() != "oops\n" || ev.exitCode == nil || *ev.exitCode != 3 || ev.closeCode != websocket.CloseNormal {
		t.Fatalf("attach: stdout %q stderr %q exit %v close %d; want got:hello, oops, 3, 1000",
			ev.stdout.String(), ev.stderr.String(), ev.exitCode, ev.closeCode)
	}

	// Resuming after the last seq gives nothing again, then the close.
	c, _, err = websocket.Dial(ctx, cl.HTTPClient(), tgt.AttachURL(st.ID, ev.seq), cl.AuthHeader())
	if err != nil {
		t.Fatalf("dial again: %v", err)
	}
	if again := readAttach(t, c); again.stdout.Len() != 0 || again.closeCode != websocket.CloseNormal {
		t.Fatalf("resumed attach: stdout %q close %d", again.stdout.String(), again.closeCode)
	}

	// A ticket, once, without the header.
	tk, err := tgt.CreateAttachTicket(ctx, st.ID)
	if err != nil || !strings.HasPrefix(tk.Ticket, "opat_") {
		t.Fatalf("ticket: %+v, %v", tk, err)
	}
	// Only on the attach route: elsewhere (the process itself, its stdin)
	// it authenticates nothing and is not spent.
	for _, path := range []string{
		"/v1/workspaces/w1/agents/a1/processes/" + st.ID + "?ticket=" + tk.Ticket,
		"/v1/workspaces/w1/agents/a1/processes/" + st.ID + "/stdin?ticket=" + tk.Ticket,
	} {
		method := "GET"
		if strings.HasSuffix(strings.Split(path, "?")[0], "stdin") {
			method = "POST"
		}
		if status, body := call(t, s, method, path, "", nil); status != http.StatusUnauthorized {
			t.Fatalf("%s %s with a ticket and no header: %d %s, want 401", method, path, status, body)
		}
	}
	u := tgt.AttachURL(st.ID, 0) + "?ticket=" + tk.Ticket
	c, _, err = websocket.Dial(ctx, nil, u, nil)
	if err != nil {
		t.Fatalf("dial with ticket: %v", err)
	}
	if ev := readAttach(t, c); ev.stdout.String() != "got:hello\n" {
		t.Fatalf("attach with ticket: stdout %q", ev.stdout.String())
	}
	_, resp, err := websocket.Dial(ctx, nil, u, nil)
	if !errors.Is(err, websocket.ErrNotUpgraded) || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("ticket used twice: %v, %v; want 401", resp, err)
	}
	resp.Body.Close()

	// Not a WebSocket, an unknown process: ordinary errors.
	for _, tt := range []struct {
		name, path string
		want       int
	}{
		{"no upgrade", "/v1/workspaces/w1/agents/a1/processes/p1/attach", http.StatusBadRequest},
		{"unknown process", "/v1/workspaces/w1/agents/a1/processes/nope/attach-tickets", http.StatusNotFound},
	} {
		method := "GET"
		if strings.HasSuffix(tt.path, "tickets") {
			method = "POST"
		}
		if status, body := call(t, s, method, tt.path, s.AdminToken(), nil); status != tt.want {
			t.Errorf("%s: status %d, want %d (%s)", tt.name, status, tt.want, body)
		}
	}
	_, resp, err = websocket.Dial(ctx, cl.HTTPClient(), tgt.AttachURL("nope", 0), cl.AuthHeader())
	if resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("attach to an unknown process: %v, %v; want 404", resp, err)
	}
	resp.Body.Close()
}

// TestAttachThroughSession: the attach WebSocket under a session's prefix
// reaches the process on the session's active backend.
func TestAttachThroughSession(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	cl := adminClient(s)
	if _, err := cl.CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	agentTgt := realAgent(t, s, "w1", "a1", t.TempDir())
	waitFor(t, waitLong, "a1 online", func() bool {
		_, err := agentTgt.ListProcesses(ctx)
		return err == nil
	})
	if _, err := cl.CreateSession(ctx, "w1", client.CreateSessionRequest{
		ID: "s1", Backends: map[string]client.SessionBackend{"laptop": {Kind: "agent", Agent: "a1"}}, Active: "laptop",
	}); err != nil {
		t.Fatal(err)
	}
	tgt := cl.Session("w1", "s1")
	st, err := tgt.StartProcess(ctx, client.StartProcessRequest{Argv: []string{"cat"}, Stdin: true, TTY: true})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := websocket.Dial(ctx, cl.HTTPClient(), tgt.AttachURL(st.ID, 0), cl.AuthHeader())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if err := c.WriteMessage(websocket.OpBinary, []byte("via-session\r")); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMessage(websocket.OpText, []byte(`{"type":"signal","signal":"KILL"}`)); err != nil {
		t.Fatal(err)
	}
	ev := readAttach(t, c)
	if !strings.Contains(ev.stdout.String(), "via-session") || ev.exitCode == nil || *ev.exitCode != 137 {
		t.Fatalf("attach through a session: output %q exit %v; want the echo and 137", ev.stdout.String(), ev.exitCode)
	}
}

// TestAttachAgentWithoutStreams: an agent that does not serve proc.attach
// (an older one) is attached through proc.read and proc.write, and stdin
// typed before the server knew it keeps its order and its write ids.
func TestAttachAgentWithoutStreams(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	if _, err := adminClient(s).CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	m := mockAgent(t, s, "w1", "old", "")
	var (
		mu     sync.Mutex
		stdin  []string
		wids   []string
		closed bool
	)
	m.Handle(wire.OpProcRead, func(req *wire.Request) (any, error) {
		var r wire.ProcReadRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.After == 0:
			return &wire.ProcReadResult{Chunks: []wire.ProcChunk{{Seq: 1, Stream: wire.StreamStdout, Data: []byte("hi\n")}}, NextSeq: 1}, nil
		case closed:
			return &wire.ProcReadResult{NextSeq: 3, ExitSeq: 2, ExitCode: 0, ClosedSeq: 3}, nil
		}
		return &wire.ProcReadResult{NextSeq: r.After}, nil
	})
	m.Handle(wire.OpProcWrite, func(req *wire.Request) (any, error) {
		var w wire.ProcWriteRequest
		if err := req.DecodeBody(&w); err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		stdin = append(stdin, string(w.Data))
		wids = append(wids, w.WriteID)
		closed = closed || w.EOF
		return nil, nil
	})
	tgt := adminClient(s).Agent("w1", "old")
	cl := adminClient(s)
	c, _, err := websocket.Dial(ctx, cl.HTTPClient(), tgt.AttachURL("p1", 0), cl.AuthHeader())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	for _, in := range []string{"a", "b", "c"} {
		if err := c.WriteMessage(websocket.OpBinary, []byte(in)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WriteMessage(websocket.OpText, []byte(`{"type":"eof"}`)); err != nil {
		t.Fatal(err)
	}
	ev := readAttach(t, c)
	if ev.stdout.String() != "hi\n" || ev.closeCode != websocket.CloseNormal {
		t.Fatalf("attach: stdout %q close %d; want hi and 1000", ev.stdout.String(), ev.closeCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(stdin, "") != "abc" || len(wids) != 4 {
		t.Fatalf("stdin %q with ids %q; want a, b, c, then eof", stdin, wids)
	}
	seen := map[string]bool{}
	for i, w := range wids {
		if w == "" || seen[w] || !strings.HasSuffix(w, "-"+strconv.Itoa(i+1)) {
			t.Fatalf("write ids %q: want distinct ids numbered from 1", wids)
		}
		seen[w] = true
	}
	if n := m.Count(wire.OpProcAttach); n != 1 {
		t.Fatalf("proc.attach asked %d times, want once", n)
	}
}

// TestAttachStreamReopens: when the agent ends the stream (paused by its
// owner), the client is told (retryable error frames) and the server opens
// a new stream once the agent serves again: stdin typed meanwhile arrives
// once, in order, and no output is lost or repeated.
func TestAttachStreamReopens(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	cl := adminClient(s)
	if _, err := cl.CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	ta := enrollAgent(t, s, "w1", "a1")
	ag := runAgent(t, s, &enroll.Config{URL: s.URL(), Workspace: "w1", Agent: "a1", NATSURLs: ta.urls, JWT: ta.jwt, Seed: string(ta.seed)}, t.TempDir())
	tgt := cl.Agent("w1", "a1")
	st, err := tgt.StartProcess(ctx, client.StartProcessRequest{Argv: []string{"cat"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := websocket.Dial(ctx, cl.HTTPClient(), tgt.AttachURL(st.ID, 0), cl.AuthHeader())
	if err != nil {
		t.Fatal(err)
	}
	type frame struct {
		op  websocket.Opcode
		p   []byte
		err error
	}
	frames := make(chan frame, 64)
	go func() { // ends when the socket does
		for {
			op, p, err := c.ReadMessage()
			frames <- frame{op, p, err}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { c.Close() })
	var out strings.Builder
	errs := 0
	// next takes one frame: output, or a retryable error frame (counted).
	next := func() frame {
		t.Helper()
		select {
		case f := <-frames:
			switch {
			case f.err != nil:
			case f.op == websocket.OpBinary:
				out.Write(f.p)
			default:
				var m attachControl
				if json.Unmarshal(f.p, &m) == nil && m.Type == "error" {
					if m.Error == nil || !m.Error.Retryable {
						t.Fatalf("error frame %+v", m.Error)
					}
					errs++
				}
			}
			return f
		case <-time.After(waitLong):
			t.Fatalf("no frame for %s (output %q)", waitLong, out.String())
		}
		return frame{}
	}
	readUntil := func(want string) {
		t.Helper()
		for out.String() != want {
			if f := next(); f.err != nil {
				t.Fatalf("read: %v (output %q, want %q)", f.err, out.String(), want)
			}
		}
	}
	if err := c.WriteMessage(websocket.OpBinary, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	readUntil("one\n")

	ag.Pause()
	for errs == 0 {
		if f := next(); f.err != nil {
			t.Fatalf("read: %v", f.err)
		}
	}
	if err := c.WriteMessage(websocket.OpBinary, []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	ag.Resume()
	readUntil("one\ntwo\n")
	if err := c.WriteMessage(websocket.OpText, []byte(`{"type":"eof"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		f := next()
		var ce *websocket.CloseError
		if errors.As(f.err, &ce) {
			if ce.Code != websocket.CloseNormal || out.String() != "one\ntwo\n" {
				t.Fatalf("after eof: output %q close %d; want nothing more and 1000", out.String(), ce.Code)
			}
			return
		}
		if f.err != nil {
			t.Fatalf("read: %v", f.err)
		}
	}
}

// TestAttachEndsWhenProcessesSwitchedOff: a policy reload that switches
// processes off ends an open attach stream: the client is told (403
// policy) and the socket closes with 1011; nothing typed after reaches
// the process.
func TestAttachEndsWhenProcessesSwitchedOff(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	root := t.TempDir()
	_, _, _, pf := policyAgentFile(t, s, "liveattach", root, `{}`)
	cl := adminClient(s)
	tgt := cl.Agent("ws1", "liveattach")
	mark := filepath.Join(root, "typed")
	st, err := tgt.StartProcess(ctx, client.StartProcessRequest{Command: "while read l; do echo \"got:$l\"; echo \"$l\" >> typed; done", Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := websocket.Dial(ctx, cl.HTTPClient(), tgt.AttachURL(st.ID, 0), cl.AuthHeader())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := time.AfterFunc(waitLong, func() { c.Close() }) // a read that never ends fails
	defer stop.Stop()
	if err := c.WriteMessage(websocket.OpBinary, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for out.String() != "got:one\n" {
		op, p, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v (output %q)", err, out.String())
		}
		if op == websocket.OpBinary {
			out.Write(p)
		}
	}
	reload(t, pf, `{"processes": false}`)
	var denied *client.ErrorDetail
	for {
		op, p, err := c.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			if ce.Code != websocket.CloseInternalError {
				t.Fatalf("closed with %d, want 1011", ce.Code)
			}
			break
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var m attachControl
		if op == websocket.OpText && json.Unmarshal(p, &m) == nil && m.Type == "error" && !m.Error.Retryable {
			denied = m.Error
			_ = c.WriteMessage(websocket.OpBinary, []byte("two\n"))
		}
	}
	if denied == nil || denied.Code != wire.CodePermissionDenied || denied.Reason != wire.ReasonPolicy {
		t.Fatalf("error frame %+v, want permission_denied/policy", denied)
	}
	time.Sleep(200 * time.Millisecond)
	if b, _ := os.ReadFile(mark); string(b) != "one\n" {
		t.Fatalf("the process got %q, want only one", b)
	}
}

// TestAppendSeqFrame: the seq frame is byte for byte what json.Marshal
// makes of attachControl, which clients decode.
func TestAppendSeqFrame(t *testing.T) {
	for _, seq := range []uint64{0, 1, 7, 1 << 40, math.MaxUint64} {
		want, err := json.Marshal(attachControl{Type: "seq", Seq: seq})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendSeqFrame([]byte("x"), seq); string(got) != "x"+string(want) {
			t.Errorf("seq %d: %s, want x%s", seq, got, want)
		}
	}
}
