package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/wire"
)

// TestAttachOnBulk: a terminal's bytes (a real agent, a real PTY) go on a
// bulk connection of the attach stream's own, plain or TLS, and not one of
// the stream's frames crosses the nats-server; cut, the connection is made
// again and the session goes on with nothing lost or repeated. An agent
// that cannot reach the control plane's URL carries the stream over NATS.
func TestAttachOnBulk(t *testing.T) {
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
			testAttachOnBulk(t, e(t), tc.bulk)
		})
	}
}

func testAttachOnBulk(t *testing.T, e *portsEnv, bulk bool) {
	ctx := context.Background()
	url := ""
	if !bulk {
		url = deadURL(t)
	}
	e.agentAt(t, "a1", url)
	cl := e.client()
	tgt := cl.Agent("w1", "a1")
	waitFor(t, waitLong, "a1 online", func() bool {
		_, err := tgt.ListProcesses(ctx)
		return err == nil
	})

	// Every attach frame that crosses the nats-server, both ways.
	var overNATS atomic.Int64
	up, err := e.s.pipeNC.Subscribe("agent.w1.a1.attach.>", func(*nats.Msg) { overNATS.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer up.Unsubscribe()
	down, err := e.s.pipeNC.Subscribe("agent.w1.a1.rpc", func(m *nats.Msg) {
		if len(m.Data) > 0 && m.Data[0] == wire.AttachMagic {
			overNATS.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Unsubscribe()
	if err := e.s.pipeNC.Flush(); err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 4)
	e.s.bulk.mu.Lock()
	e.s.bulk.attached = func(c net.Conn) { conns <- c }
	e.s.bulk.mu.Unlock()
	before := e.s.bulk.claimed.Load()

	st, err := tgt.StartProcess(ctx, client.StartProcessRequest{Command: "stty raw -echo; echo ready; exec cat", TTY: true})
	if err != nil {
		t.Fatal(err)
	}
	a := e.dialAttach(t, cl, tgt, st.ID)
	a.until("ready\n")
	for _, k := range "typed" {
		a.send(string(k))
	}
	a.until("ready\ntyped")

	if !bulk {
		if n := e.s.bulk.claimed.Load() - before; n != 0 {
			t.Fatalf("%d bulk connections from an agent that cannot make one", n)
		}
		if overNATS.Load() == 0 {
			t.Fatal("the fallback's frames did not go over NATS")
		}
		return
	}
	if n := e.s.bulk.claimed.Load() - before; n != 1 {
		t.Fatalf("%d bulk connections for one attach, want 1", n)
	}
	if n := overNATS.Load(); n != 0 {
		t.Fatalf("%d attach frames crossed the nats-server, want none", n)
	}

	// Cut: a new stream on a new connection, from the cursor the client
	// has; the keys typed after it arrive once.
	(<-conns).Close()
	a.send("-after")
	a.until("-after")
	if got := a.out.String(); got != "ready\ntyped-after" {
		t.Fatalf("output %q after the cut, want ready, typed-after once", got)
	}
	select {
	case <-conns:
	case <-time.After(waitLong):
		t.Fatal("no second bulk connection after the cut")
	}
	if n := overNATS.Load(); n != 0 {
		t.Fatalf("%d attach frames crossed the nats-server, want none", n)
	}

	// A second client at once: a stream (and a bulk connection) of its
	// own, the output from its cursor; both see what is typed in either.
	a2 := e.dialAttach(t, cl, tgt, st.ID)
	a2.until("ready\ntyped-after")
	a2.send("+2")
	a2.until("+2")
	a.until("+2")
	if got, got2 := a.out.String(), a2.out.String(); got != "ready\ntyped-after+2" || got2 != got {
		t.Fatalf("outputs %q and %q, want ready, typed-after+2 in both", got, got2)
	}
	if n := e.s.bulk.claimed.Load() - before; n != 3 {
		t.Fatalf("%d bulk connections for two attachments and a cut, want 3", n)
	}
	if n := overNATS.Load(); n != 0 {
		t.Fatalf("%d attach frames crossed the nats-server, want none", n)
	}

	// The process ends: exit and a normal close, as over NATS.
	if err := a.c.WriteMessage(websocket.OpText, []byte(`{"type":"signal","signal":"KILL"}`)); err != nil {
		t.Fatal(err)
	}
	stop := time.AfterFunc(waitLong, func() { a.c.Close() }) // a read that never ends fails
	defer stop.Stop()
	var exit *int
	for {
		op, p, err := a.c.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			if ce.Code != websocket.CloseNormal || exit == nil || *exit != 137 {
				t.Fatalf("closed with %d, exit %v; want 1000 and 137", ce.Code, exit)
			}
			return
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var m attachControl
		if op == websocket.OpText && json.Unmarshal(p, &m) == nil && m.Type == "exit" {
			exit = m.ExitCode
		}
	}
}

// TestAttachOnBulkEveryByte: 4.5 MB of output through an attach stream on a
// bulk connection arrive whole and in order, paced by credits (the agent
// pushes at most 256 KiB ahead of them: without the credit every 64 KiB,
// one every 2 s keepalive would take most of a minute).
func TestAttachOnBulkEveryByte(t *testing.T) {
	e := newPortsEnv(t)
	ctx := context.Background()
	cl, tgt := e.onlineAgent(t, "a1")
	before := e.s.bulk.claimed.Load()
	const n = 600000
	st, err := tgt.StartProcess(ctx, client.StartProcessRequest{Argv: []string{"seq", "1", strconv.Itoa(n)}})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := websocket.Dial(ctx, e.httpClient(), tgt.AttachURL(st.ID, 0), cl.AuthHeader())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	start := time.Now()
	ev := readAttach(t, c)
	var want strings.Builder
	for i := 1; i <= n; i++ {
		want.WriteString(strconv.Itoa(i))
		want.WriteByte('\n')
	}
	if got := ev.stdout.String(); got != want.String() || ev.closeCode != websocket.CloseNormal {
		t.Fatalf("%d bytes of %d, equal %v, close %d (in %s)", len(got), want.Len(), got == want.String(), ev.closeCode, time.Since(start))
	}
	if n := e.s.bulk.claimed.Load() - before; n != 1 {
		t.Fatalf("%d bulk connections for one attach, want 1", n)
	}
}

// holdingURL is an http:// URL whose listener takes connections and never
// reads or answers them (a proxy or firewall that holds them) until the
// test ends; held counts the connections taken.
func holdingURL(t *testing.T) (url string, held *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held = new(atomic.Int64)
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	go func() { // ends when the listener closes
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held.Add(1)
			conns = append(conns, c) // read nothing, answer nothing
		}
	}()
	return "http://" + ln.Addr().String(), held
}

// TestAttachBulkDialHangs: an agent whose way to the control plane's URL
// takes connections and never answers (a proxy or firewall that holds
// them) gives up its bulk dial within a few seconds and carries the
// stream over NATS; the next attach does not try again, so it does not
// wait again.
func TestAttachBulkDialHangs(t *testing.T) {
	e := newPortsEnv(t)
	ctx := context.Background()
	url, held := holdingURL(t)
	e.agentAt(t, "a1", url)
	cl := e.client()
	tgt := cl.Agent("w1", "a1")
	waitFor(t, waitLong, "a1 online", func() bool {
		_, err := tgt.ListProcesses(ctx)
		return err == nil
	})
	before := e.s.bulk.claimed.Load()
	st, err := tgt.StartProcess(ctx, client.StartProcessRequest{Argv: []string{"cat"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"one\n", "two\n"} {
		a := e.dialAttach(t, cl, tgt, st.ID)
		a.send(in)
		a.until(in)
		a.c.Close() // this attach ends before the next
	}
	if n := e.s.bulk.claimed.Load() - before; n != 0 {
		t.Fatalf("%d bulk connections claimed through a route that holds them", n)
	}
	if n := held.Load(); n != 1 {
		t.Fatalf("the agent dialed %d times for two attaches, want once (then NATS without trying)", n)
	}
}

// TestAttachBulkCutAtOnce: a route that cuts every attach stream's bulk
// connection as soon as it is made (here the control plane's end is
// closed when the stream takes it) does not leave the terminal without
// output while streams and connections are made again and again: the
// stream goes over NATS after the first connection that carried nothing.
func TestAttachBulkCutAtOnce(t *testing.T) {
	e := newPortsEnv(t)
	ctx := context.Background()
	cl, tgt := e.onlineAgent(t, "a1")
	e.s.bulk.mu.Lock()
	e.s.bulk.attached = func(c net.Conn) { c.Close() }
	e.s.bulk.mu.Unlock()
	before := e.s.bulk.claimed.Load()
	st, err := tgt.StartProcess(ctx, client.StartProcessRequest{Argv: []string{"cat"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	a := e.dialAttach(t, cl, tgt, st.ID)
	a.send("typed\n")
	a.until("typed\n")
	if got := a.out.String(); got != "typed\n" {
		t.Fatalf("output %q, want typed once", got)
	}
	if n := e.s.bulk.claimed.Load() - before; n != 1 {
		t.Fatalf("%d bulk connections, want 1 (then NATS)", n)
	}
}

// holeRelay forwards TCP connections to addr until hole: from then on the
// connections it has forward nothing more and read nothing more (an agent
// whose route went silent: no FIN, no RST); later ones forward.
type holeRelay struct {
	url   string
	mu    sync.Mutex
	conns []*holeConn
}

type holeConn struct {
	holed atomic.Bool
	stop  chan struct{}
}

func newHoleRelay(t *testing.T, addr string) *holeRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &holeRelay{url: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	t.Cleanup(func() { ln.Close(); close(stop); wg.Wait() })
	wg.Add(1)
	go func() { // ends when the listener closes
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", addr)
			if err != nil {
				in.Close()
				continue
			}
			hc := &holeConn{stop: stop}
			r.mu.Lock()
			r.conns = append(r.conns, hc)
			r.mu.Unlock()
			copyUntilHole := func(dst, src net.Conn) {
				defer wg.Done()
				defer dst.Close()
				defer src.Close()
				buf := make([]byte, 4<<10)
				for {
					n, err := src.Read(buf)
					if hc.holed.Load() {
						<-hc.stop // read nothing more, answer nothing
						return
					}
					if n > 0 {
						if _, err := dst.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}
			wg.Add(2)
			go copyUntilHole(out, in)
			go copyUntilHole(in, out)
		}
	}()
	return r
}

// hole silences the connections made so far.
func (r *holeRelay) hole() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.holed.Store(true)
	}
}

// TestAttachBulkSilentRoute: when the route of an attach stream's bulk
// connection goes silent (no FIN, no RST) while stdin is being sent, the
// control plane's writes, stuck on the full socket, do not keep the
// stream open past the agent's silence bound: a new stream takes over
// within seconds and every byte typed arrives once, in order.
func TestAttachBulkSilentRoute(t *testing.T) {
	e := newPortsEnv(t)
	ctx := context.Background()
	relay := newHoleRelay(t, strings.TrimPrefix(e.s.URL(), "http://"))
	e.agentAt(t, "a1", relay.url)
	cl := e.client()
	tgt := cl.Agent("w1", "a1")
	waitFor(t, waitLong, "a1 online", func() bool {
		_, err := tgt.ListProcesses(ctx)
		return err == nil
	})
	var first atomic.Bool
	e.s.bulk.mu.Lock()
	e.s.bulk.attached = func(c net.Conn) {
		if p, ok := c.(*prefixedConn); ok {
			c = p.Conn
		}
		if first.CompareAndSwap(false, true) {
			_ = c.(*net.TCPConn).SetWriteBuffer(4 << 10) // full after little stdin
		}
	}
	e.s.bulk.mu.Unlock()
	before := e.s.bulk.claimed.Load()
	st, err := tgt.StartProcess(ctx, client.StartProcessRequest{Argv: []string{"cat"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	a := e.dialAttach(t, cl, tgt, st.ID)
	a.send("first\n")
	a.until("first\n")
	if n := e.s.bulk.claimed.Load() - before; n != 1 || !first.Load() {
		t.Fatalf("%d bulk connections, the stream on one: %v; want 1, true", n, first.Load())
	}

	relay.hole()
	want := "first\n"
	line := strings.Repeat("x", 1023) + "\n"
	for i := 0; i < 4; i++ {
		p := strings.Repeat(line, 128) // 128 KiB
		want += p
		a.send(p)
	}
	a.send("after\n")
	want += "after\n"
	a.until("after\n")
	if a.out.String() != want {
		t.Fatalf("%d bytes of output, want %d: every byte typed, once, in order", a.out.Len(), len(want))
	}
	if len(a.told) == 0 || slices.ContainsFunc(a.told, func(c string) bool { return c != string(wire.CodeUnavailable) }) {
		t.Fatalf("the client was told %v, want unavailable (the agent sent nothing)", a.told)
	}
}

// TestAttachBulkLeaveWhileOpening: a client that leaves while a stream is
// being opened (here the second, after a cut) leaves no bulk connection
// open behind it: the control plane closes the stream it just opened.
func TestAttachBulkLeaveWhileOpening(t *testing.T) {
	e := newPortsEnv(t)
	ctx := context.Background()
	cl, tgt := e.onlineAgent(t, "a1")
	st, err := tgt.StartProcess(ctx, client.StartProcessRequest{Argv: []string{"cat"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	var a *attachClient
	conns := make(chan net.Conn, 2)
	var n atomic.Int64
	e.s.bulk.mu.Lock()
	e.s.bulk.attached = func(bc net.Conn) {
		if n.Add(1) == 2 {
			a.c.Close() // the client leaves as the second stream opens
			time.Sleep(300 * time.Millisecond)
		}
		conns <- bc
	}
	e.s.bulk.mu.Unlock()
	a = e.dialAttach(t, cl, tgt, st.ID)
	a.send("one\n")
	a.until("one\n")
	if got := a.out.String(); got != "one\n" {
		t.Fatalf("output %q, want one once", got)
	}
	if len(conns) != 1 {
		t.Fatalf("%d bulk connections, want 1", len(conns))
	}
	(<-conns).Close() // cut: a second stream opens, and the client leaves
	var second net.Conn
	select {
	case second = <-conns:
	case <-time.After(waitLong):
		t.Fatal("no second bulk connection after the cut")
	}
	waitFor(t, 5*time.Second, "the second stream's connection closed", func() bool {
		return errors.Is(second.SetWriteDeadline(time.Now().Add(time.Minute)), net.ErrClosed)
	})
}

// onlineAgent starts agent id (its URL the control plane's) and returns a
// client and the agent's target once it answers.
func (e *portsEnv) onlineAgent(t *testing.T, id string) (*client.Client, *client.Target) {
	t.Helper()
	e.agentAt(t, id, "")
	cl := e.client()
	tgt := cl.Agent("w1", id)
	waitFor(t, waitLong, id+" online", func() bool {
		_, err := tgt.ListProcesses(context.Background())
		return err == nil
	})
	return cl, tgt
}

// attachClient is a test's client of one attach stream: the output it
// read and the codes of the error frames it was sent.
type attachClient struct {
	t    *testing.T
	c    *websocket.Conn
	out  strings.Builder
	told []string
}

// dialAttach attaches to process id; the connection ends with the test.
func (e *portsEnv) dialAttach(t *testing.T, cl *client.Client, tgt *client.Target, id string) *attachClient {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), e.httpClient(), tgt.AttachURL(id, 0), cl.AuthHeader())
	if err != nil {
		t.Fatalf("attach: dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &attachClient{t: t, c: c}
}

// send types s.
func (a *attachClient) send(s string) {
	a.t.Helper()
	if err := a.c.WriteMessage(websocket.OpBinary, []byte(s)); err != nil {
		a.t.Fatal(err)
	}
}

// until reads until the output ends in want; a read that fails, or takes
// longer than waitLong, fails the test with what was read.
func (a *attachClient) until(want string) {
	a.t.Helper()
	stop := time.AfterFunc(waitLong, func() { a.c.Close() })
	defer stop.Stop()
	for !strings.HasSuffix(a.out.String(), want) {
		op, p, err := a.c.ReadMessage()
		if err != nil {
			a.t.Fatalf("read: %v (%d bytes of output, want it to end in %q; told %v)", err, a.out.Len(), want, a.told)
		}
		var m attachControl
		switch {
		case op == websocket.OpBinary:
			a.out.Write(p)
		case json.Unmarshal(p, &m) == nil && m.Type == "error" && m.Error != nil:
			a.told = append(a.told, string(m.Error.Code))
		}
	}
}

// TestAttachOnBulkSmallFrames: output written a few bytes at a time, each
// its own events frame (decoded into the last one's storage), of lengths
// that grow and shrink, with stderr between, and the exit, arrives as it
// was written: nothing of one frame in the next.
func TestAttachOnBulkSmallFrames(t *testing.T) {
	e := newPortsEnv(t)
	ctx := context.Background()
	cl, tgt := e.onlineAgent(t, "a1")
	const script = `for i in 1 22 333 4444 55555 4444 333 22 1 10 9 100 8; do printf '%s\n' "$i"; printf 'e%s' "$i" >&2; sleep 0.02; done; exit 3`
	st, err := tgt.StartProcess(ctx, client.StartProcessRequest{Argv: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := websocket.Dial(ctx, e.httpClient(), tgt.AttachURL(st.ID, 0), cl.AuthHeader())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	ev := readAttach(t, c)
	const want = "1\n22\n333\n4444\n55555\n4444\n333\n22\n1\n10\n9\n100\n8\n"
	if got := ev.stdout.String(); got != want || ev.closeCode != websocket.CloseNormal {
		t.Fatalf("stdout %q, close %d; want %q", got, ev.closeCode, want)
	}
	const wantErr = "e1e22e333e4444e55555e4444e333e22e1e10e9e100e8"
	if got := ev.stderr.String(); got != wantErr {
		t.Fatalf("stderr %q, want %q", got, wantErr)
	}
	if ev.exitCode == nil || *ev.exitCode != 3 {
		t.Fatalf("exit %v, want 3", ev.exitCode)
	}
}
