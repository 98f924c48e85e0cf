package agent_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/wire"
	"golang.org/x/sys/unix"
)

// bulkStream is a terminal's attach stream on a bulk connection, the
// control plane's end by hand.
type bulkStream struct {
	t      *testing.T
	p      bulkPeer
	out    strings.Builder
	acked  uint64
	acks   int // acknowledgements taken
	writes uint64
}

// openBulkStream starts command on a terminal and attaches to it over a
// bulk connection; the first credit is sent.
func openBulkStream(t *testing.T, command string) *bulkStream {
	t.Helper()
	w := newWorld(t)
	end := newBulkEnd(t)
	id := *w.ident
	id.URL = end.url
	r := w.start(t, agent.Config{Identity: &id})
	w.waitOnline(t, r.a.Instance())
	w.startProc(t, wire.ProcStartRequest{ID: "p1", Command: command, TTY: true, Stdin: true})
	s := &bulkStream{t: t, p: attachBulk(t, w, end)}
	t.Cleanup(func() { s.p.c.Close() })
	_ = s.p.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	s.send(wire.AttachFrame{Kind: wire.AttachCredit})
	return s
}

func (s *bulkStream) send(f wire.AttachFrame) {
	s.t.Helper()
	f.Stream = "s1"
	if _, err := s.p.c.Write(wire.AppendAttachBulkFrame(nil, f, true)); err != nil {
		s.t.Fatal(err)
	}
}

// key sends stdin write b (the next write).
func (s *bulkStream) key(b string) {
	s.t.Helper()
	s.writes++
	s.send(wire.AttachFrame{Kind: wire.AttachWrite, N: s.writes, Data: []byte(b)})
}

// until reads the agent's frames until ok.
func (s *bulkStream) until(what string, ok func() bool) {
	s.t.Helper()
	for !ok() {
		f, err := wire.ReadAttachBulkFrame(s.p.r, false)
		if err != nil {
			s.t.Fatalf("%s: %v (output %q, acked %d)", what, err, s.out.String(), s.acked)
		}
		switch f.Kind {
		case wire.AttachEvents:
			var res wire.ProcReadResult
			if err := wire.Unmarshal(f.Data, &res); err != nil {
				s.t.Fatal(err)
			}
			for _, c := range res.Chunks {
				s.out.Write(c.Data)
			}
		case wire.AttachAck:
			if len(f.Data) > 0 {
				s.t.Fatalf("write %d failed", f.N)
			}
			s.acked = max(s.acked, f.N)
			s.acks++
		case wire.AttachEnd:
			s.t.Fatalf("%s: the stream ended: %s", what, f.Data)
		}
	}
}

// dataSegmentsIn is how many TCP segments with data the control plane's
// end of the connection received so far: the agent's writes, one a
// segment on loopback (the connection is not TLS).
func (s *bulkStream) dataSegmentsIn() uint32 {
	s.t.Helper()
	rc, err := s.p.c.(*net.TCPConn).SyscallConn()
	if err != nil {
		s.t.Fatal(err)
	}
	var info *unix.TCPInfo
	if cerr := rc.Control(func(fd uintptr) { info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); cerr != nil {
		s.t.Fatal(cerr)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return info.Data_segs_in
}

// TestAttachAckRidesWithEcho: typed one key at a time into a terminal
// that echoes, the agent's acknowledgements of stdin (every 16 writes)
// go out in the same write as a keystroke's echo: one segment a
// keystroke reaches the control plane, not one more every 16th (which
// costs that keystroke a read and a wake-up there, before its echo).
func TestAttachAckRidesWithEcho(t *testing.T) {
	s := openBulkStream(t, "stty raw -echo; echo ready; exec cat")
	s.until("ready", func() bool { return strings.Contains(s.out.String(), "ready") })
	// One key first: once its echo is in, everything sent before it is.
	s.key("0")
	s.until("first echo", func() bool { return strings.HasSuffix(s.out.String(), "0") })
	before := s.dataSegmentsIn()
	const keys = 48 // writes 2 to 49: acknowledgements due at 16, 32 and 48
	for i := range keys {
		b := string(rune('a' + i%26))
		s.key(b)
		want := s.out.Len() + 1
		s.until("echo of "+b, func() bool { return s.out.Len() >= want })
	}
	// With the echoes.
	s.until("48 writes acknowledged", func() bool { return s.acked >= 48 })
	if got := s.dataSegmentsIn() - before; got > keys {
		t.Errorf("%d keystrokes echoed in %d segments from the agent, want at most one a keystroke (acknowledgements with the echoes)", keys, got)
	}
}

// TestAttachAckWithoutOutput: stdin of a program that prints nothing is
// acknowledged too: alone once 32 writes are untold, the rest on a
// credit (the control plane's keepalive, or its ask before a signal).
func TestAttachAckWithoutOutput(t *testing.T) {
	s := openBulkStream(t, "stty raw -echo; echo ready; exec cat >/dev/null")
	s.until("ready", func() bool { return strings.Contains(s.out.String(), "ready") })
	for range 40 {
		s.key("x")
	}
	s.until("32 writes acknowledged with no credit", func() bool { return s.acked >= 32 })
	s.send(wire.AttachFrame{Kind: wire.AttachCredit})
	s.until("40 writes acknowledged on a credit", func() bool { return s.acked == 40 })
}

// TestAttachAckLargeWrites: a paste of large writes (the web console's
// paste, split by the control plane at wire.AttachWriteMax) to a program
// that prints nothing is acknowledged as it is written, with no credit:
// the control plane holds at most 1 MiB unacknowledged (it sends the
// write that crosses it, then waits), five such writes, far fewer than
// 16; without an acknowledgement the paste would stop there until the
// next keepalive, every MiB.
func TestAttachAckLargeWrites(t *testing.T) {
	s := openBulkStream(t, "stty raw -echo; echo ready; exec cat >/dev/null")
	s.until("ready", func() bool { return strings.Contains(s.out.String(), "ready") })
	big := strings.Repeat("x", wire.AttachWriteMax)
	const writes = 5 // 1.25 MiB: what the control plane sends before it waits
	for range writes {
		s.key(big)
	}
	_ = s.p.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	s.until("the paste acknowledged with no credit", func() bool { return s.acked == writes })
}

// TestAttachAckAfterCreditInFlight: a credit that comes while a write is
// still under way (a paste into a program not reading yet) is answered
// with the writes done, and the rest is acknowledged as soon as it is
// written, with no further credit: the control plane's credit before a
// signal or resize waits for exactly that (drainStdin), and would else
// wait for the next keepalive.
func TestAttachAckAfterCreditInFlight(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "go")
	s := openBulkStream(t, "stty raw -echo; echo ready; while [ ! -e "+gate+" ]; do sleep 0.02; done; exec cat >/dev/null")
	s.until("ready", func() bool { return strings.Contains(s.out.String(), "ready") })
	s.key(strings.Repeat("x", 192<<10)) // far more than the terminal holds unread (under attachAckBytes): under way
	s.send(wire.AttachFrame{Kind: wire.AttachCredit})
	s.until("the credit's answer", func() bool { return s.acks > 0 })
	if s.acked != 0 {
		t.Fatalf("write 1 acknowledged before the program read it")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = s.p.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	s.until("write 1 acknowledged once written, with no further credit", func() bool { return s.acked == 1 })
}
