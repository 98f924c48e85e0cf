package agent_test

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// attachPeer is the control plane's end of one attach stream, by hand:
// the frames the agent pushes, and frames sent to it.
type attachPeer struct {
	t      *testing.T
	w      *world
	stream string
	frames chan *nats.Msg
	out    bytes.Buffer // output (stdout or pty), in order
	errOut bytes.Buffer // stderr, in order
	next   uint64       // the cursor so far
	exit   *int
	closed bool
	acked  uint64
	ended  string
	lastN  int // output bytes in the last events frame
}

// openAttach subscribes to the stream's subject and opens it with
// proc.attach.
func (w *world) openAttach(t *testing.T, req wire.ProcAttachRequest) (*attachPeer, error) {
	t.Helper()
	subj, err := laptop.Attach(req.Owner, req.Stream)
	if err != nil {
		t.Fatal(err)
	}
	p := &attachPeer{t: t, w: w, stream: req.Stream, frames: make(chan *nats.Msg, 4096), next: req.After, acked: req.Writes}
	sub, err := w.nc.ChanSubscribe(subj, p.frames)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return p, w.calls.Call(tctx(t), laptop, wire.OpProcAttach, &req, nil, rpc.CallOptions{})
}

func (p *attachPeer) send(f wire.AttachFrame) {
	p.t.Helper()
	f.Stream = p.stream
	subj, _ := laptop.RPC()
	if err := p.w.nc.Publish(subj, wire.AppendAttachFrame(nil, f, true)); err != nil {
		p.t.Fatal(err)
	}
}

// take handles one frame, waiting up to d; false when none came.
func (p *attachPeer) take(d time.Duration) bool {
	p.t.Helper()
	select {
	case m := <-p.frames:
		f, err := wire.DecodeAttachFrame(m.Data, false)
		if err != nil {
			p.t.Fatalf("frame from the agent: %v", err)
		}
		switch f.Kind {
		case wire.AttachEvents:
			var res wire.ProcReadResult
			if err := wire.Unmarshal(f.Data, &res); err != nil {
				p.t.Fatal(err)
			}
			p.lastN = 0
			for _, c := range res.Chunks {
				if c.Seq <= p.next {
					p.t.Fatalf("chunk %d pushed again (cursor %d)", c.Seq, p.next)
				}
				if c.Stream == wire.StreamStderr {
					p.errOut.Write(c.Data)
				} else {
					p.out.Write(c.Data)
				}
				p.lastN += len(c.Data)
			}
			if res.Dropped != 0 {
				p.t.Fatalf("%d bytes dropped while attached", res.Dropped)
			}
			p.next = res.NextSeq
			if res.ExitSeq != 0 {
				code := res.ExitCode
				p.exit = &code
			}
			p.closed = res.ClosedSeq != 0
		case wire.AttachAck:
			if len(f.Data) > 0 {
				var we wire.Error
				_ = wire.Unmarshal(f.Data, &we)
				p.t.Fatalf("write %d failed: %v", f.N, &we)
			}
			p.acked = max(p.acked, f.N)
		case wire.AttachEnd:
			p.ended = string(f.Data)
		}
		return true
	case <-time.After(d):
		return false
	}
}

// until takes frames until ok, failing after 20 s.
func (p *attachPeer) until(what string, ok func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: not after 20 s (output %q, next %d, acked %d)", what, p.out.String(), p.next, p.acked)
		}
		p.take(100 * time.Millisecond)
	}
}

func (w *world) startProc(t *testing.T, req wire.ProcStartRequest) {
	t.Helper()
	if err := w.calls.Call(tctx(t), laptop, wire.OpProcStart, &req, nil, rpc.CallOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestAttachStreamStdinExactlyOnce: the agent pushes output once the first
// credit came; stdin frames are written in order and each once: a repeat
// is acknowledged and not written, a frame past a lost one is dropped
// until the lost one comes, a later stream (or proc.write) with the same
// write ids writes nothing twice; EOF ends the process, whose exit and
// closed are pushed.
func TestAttachStreamStdinExactlyOnce(t *testing.T) {
	w := newWorld(t)
	r := w.start(t, agent.Config{})
	w.waitOnline(t, r.a.Instance())
	w.startProc(t, wire.ProcStartRequest{ID: "p1", Command: "echo ready; exec cat", Stdin: true})

	p, err := w.openAttach(t, wire.ProcAttachRequest{ID: "p1", Owner: "o1", Stream: "s1", WritePrefix: "wp-", MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if p.take(300 * time.Millisecond) {
		t.Fatal("the agent pushed before the first credit")
	}
	p.send(wire.AttachFrame{Kind: wire.AttachCredit})
	p.until("ready pushed", func() bool { return p.out.String() == "ready\n" })

	p.send(wire.AttachFrame{Kind: wire.AttachWrite, N: 1, Data: []byte("a\n")})
	p.send(wire.AttachFrame{Kind: wire.AttachWrite, N: 1, Data: []byte("a\n")}) // a repeat
	p.send(wire.AttachFrame{Kind: wire.AttachWrite, N: 3, Data: []byte("c\n")}) // 2 was lost
	p.send(wire.AttachFrame{Kind: wire.AttachWrite, N: 2, Data: []byte("b\n")})
	p.until("a and b echoed", func() bool { return p.out.String() == "ready\na\nb\n" })
	p.send(wire.AttachFrame{Kind: wire.AttachWrite, N: 3, Data: []byte("c\n")}) // sent again
	p.until("c echoed", func() bool { return p.out.String() == "ready\na\nb\nc\n" })
	p.send(wire.AttachFrame{Kind: wire.AttachCredit, N: p.next})
	p.until("writes acknowledged", func() bool { return p.acked == 3 })

	// A new stream that saw only write 1 acknowledged sends 2 and 3 again:
	// nothing is written twice; nor by proc.write with write 3's id.
	p.send(wire.AttachFrame{Kind: wire.AttachClose})
	q, err := w.openAttach(t, wire.ProcAttachRequest{ID: "p1", After: p.next, Owner: "o1", Stream: "s2", WritePrefix: "wp-", Writes: 1})
	if err != nil {
		t.Fatal(err)
	}
	q.send(wire.AttachFrame{Kind: wire.AttachCredit, N: p.next})
	q.send(wire.AttachFrame{Kind: wire.AttachWrite, N: 2, Data: []byte("b\n")})
	q.send(wire.AttachFrame{Kind: wire.AttachWrite, N: 3, Data: []byte("c\n")})
	if err := w.calls.Call(tctx(t), laptop, wire.OpProcWrite, &wire.ProcWriteRequest{ID: "p1", WriteID: "wp-3", Data: []byte("c\n")}, nil, rpc.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	q.send(wire.AttachFrame{Kind: wire.AttachWrite, N: 4, Data: []byte("d\n")})
	q.send(wire.AttachFrame{Kind: wire.AttachEOF, N: 5})
	q.until("closed", func() bool { return q.closed })
	if got := q.out.String(); got != "d\n" {
		t.Fatalf("second stream's output %q, want only d", got)
	}
	if q.exit == nil || *q.exit != 0 {
		t.Fatalf("exit %v, want 0", q.exit)
	}
}

// TestAttachStreamFlowControl: a stream pushes at most its flight bound
// ahead of the credits, and, credited, every byte of a fast producer
// arrives once, in order, with no gap.
func TestAttachStreamFlowControl(t *testing.T) {
	w := newWorld(t)
	r := w.start(t, agent.Config{})
	w.waitOnline(t, r.a.Instance())
	const size = 8 << 20
	w.startProc(t, wire.ProcStartRequest{ID: "big", Command: "head -c 8388608 /dev/urandom | tee /dev/stderr | sha256sum"})
	p, err := w.openAttach(t, wire.ProcAttachRequest{ID: "big", Owner: "o1", Stream: "s1", MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	p.send(wire.AttachFrame{Kind: wire.AttachCredit})
	for p.take(500 * time.Millisecond) {
	}
	const flight, frame = 256 << 10, 64 << 10
	if n := p.out.Len() + p.errOut.Len(); n == 0 || n > flight+frame {
		t.Fatalf("%d bytes pushed without a credit, want 1 to %d", n, flight+frame)
	}
	p.until("closed", func() bool {
		if p.lastN > 0 {
			p.send(wire.AttachFrame{Kind: wire.AttachCredit, N: p.next})
			p.lastN = 0
		}
		return p.closed
	})
	sum := strings.Fields(p.out.String())
	if p.errOut.Len() != size || len(sum) == 0 {
		t.Fatalf("%d bytes and %q, want %d and a checksum", p.errOut.Len(), p.out.String(), size)
	}
	if got := sha256.Sum256(p.errOut.Bytes()); sum[0] != hexString(got[:]) {
		t.Fatalf("sha256 of what arrived %x, the process sent %s", got, sum[0])
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestAttachStreamLease: a stream the control plane stops feeding ends,
// and the agent says so.
func TestAttachStreamLease(t *testing.T) {
	defer agent.SetAttachLease(300 * time.Millisecond)()
	w := newWorld(t)
	r := w.start(t, agent.Config{})
	w.waitOnline(t, r.a.Instance())
	w.startProc(t, wire.ProcStartRequest{ID: "p1", Argv: []string{"sleep", "30"}})
	p, err := w.openAttach(t, wire.ProcAttachRequest{ID: "p1", Owner: "o1", Stream: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	p.send(wire.AttachFrame{Kind: wire.AttachCredit})
	p.until("the stream ended", func() bool { return p.ended != "" })
}
