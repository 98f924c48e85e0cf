package agent_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// bulkEnd is a control plane's bulk endpoint by hand: it answers every
// upgrade with 101 and hands the connection (with what was read ahead) to
// the test.
type bulkEnd struct {
	url   string
	conns chan bulkPeer
}

type bulkPeer struct {
	c net.Conn
	r *bufio.Reader
}

func newBulkEnd(t *testing.T) *bulkEnd {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &bulkEnd{url: "http://" + ln.Addr().String(), conns: make(chan bulkPeer, 4)}
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
		close(e.conns)
		for p := range e.conns {
			p.c.Close()
		}
	})
	go func() { // ends when the listener closes
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			if _, err := http.ReadRequest(br); err != nil {
				c.Close()
				continue
			}
			fmt.Fprint(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+wire.BulkUpgrade+"\r\n\r\n")
			select {
			case e.conns <- bulkPeer{c: c, r: br}:
			default:
				c.Close()
			}
		}
	}()
	return e
}

// attachBulk attaches stream s1 to process p1 with a bulk ticket, and
// returns the control plane's end of the bulk connection the stream is
// on (end's); the caller closes it.
func attachBulk(t *testing.T, w *world, end *bulkEnd) bulkPeer {
	t.Helper()
	var res wire.ProcAttachResult
	req := wire.ProcAttachRequest{ID: "p1", Owner: "o1", Stream: "s1", WritePrefix: "wp-", MaxBytes: 1 << 20, Ticket: "bticket1"}
	if err := w.calls.Call(tctx(t), laptop, wire.OpProcAttach, &req, &res, rpc.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if !res.Bulk {
		t.Fatal("the stream is not on a bulk connection")
	}
	select {
	case p := <-end.conns:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no bulk connection")
	}
	return bulkPeer{}
}

// TestAttachBulkNoStdinAfterEnd: once the agent ended an attach stream on
// a bulk connection (here: a policy that switches processes off), stdin
// the control plane sent before it learned so is not written, as over
// NATS (where the ended stream's frames are dropped).
func TestAttachBulkNoStdinAfterEnd(t *testing.T) {
	w := newWorld(t)
	end := newBulkEnd(t)
	id := *w.ident
	id.URL = end.url
	pf := openPolicy(t, `{}`)
	r := w.start(t, agent.Config{Identity: &id, Policy: pf})
	w.waitOnline(t, r.a.Instance())
	got := filepath.Join(t.TempDir(), "stdin")
	w.startProc(t, wire.ProcStartRequest{ID: "p1", Argv: []string{"sh", "-c", "cat > " + got}, Stdin: true})

	p := attachBulk(t, w, end)
	defer p.c.Close()
	send := func(f wire.AttachFrame) {
		t.Helper()
		f.Stream = "s1"
		if _, err := p.c.Write(wire.AppendAttachBulkFrame(nil, f, true)); err != nil {
			t.Fatal(err)
		}
	}
	_ = p.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	// until reads the agent's frames until one of kind k that ok takes.
	until := func(k wire.AttachKind, ok func(wire.AttachFrame) bool) {
		t.Helper()
		for {
			f, err := wire.ReadAttachBulkFrame(p.r, false)
			if err != nil {
				t.Fatalf("waiting for a %q frame: %v", k, err)
			}
			if f.Kind == k && ok(f) {
				return
			}
		}
	}
	send(wire.AttachFrame{Kind: wire.AttachCredit})
	send(wire.AttachFrame{Kind: wire.AttachWrite, N: 1, Data: []byte("one\n")})
	send(wire.AttachFrame{Kind: wire.AttachCredit})
	until(wire.AttachAck, func(f wire.AttachFrame) bool { return f.N == 1 })

	// Processes switched off: the agent ends the stream (z) and half-closes.
	if err := os.WriteFile(pf.Path(), []byte(`{"processes": false}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := pf.Reload(); err != nil {
		t.Fatal(err)
	}
	until(wire.AttachEnd, func(wire.AttachFrame) bool { return true })
	// What the control plane sent before it read that.
	send(wire.AttachFrame{Kind: wire.AttachWrite, N: 2, Data: []byte("two\n")})
	// The agent closes the connection once it read the frames.
	for {
		if _, err := wire.ReadAttachBulkFrame(p.r, false); err != nil {
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // cat writes what it was given
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "one\n" {
		t.Fatalf("the process's stdin %q, want only what came before the stream ended", b)
	}
}
