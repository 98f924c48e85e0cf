package agent

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/outposthq/outpost/agent/proc"
	"github.com/outposthq/outpost/internal/bulkconn"
	"github.com/outposthq/outpost/internal/hoptrace"
	"github.com/outposthq/outpost/internal/rawio"
	"github.com/outposthq/outpost/wire"
)

// Attach streams (wire/PROTOCOL.md "Attach streams"): while a client is
// attached to a process, the agent pushes the process's events to the
// control plane as they happen, from the goroutine that produced them (the
// process's pump: no handoff, no request per read), on
// agent.<ws>.<agent>.attach.<owner>.<stream>, its own subjects. The control
// plane's frames (credit, stdin, eof, close) come on the rpc subject with
// no reply subject, like pipe frames. A stream whose proc.attach carried a
// ticket goes on a bulk connection of its own instead, both ways (no
// nats-server between the agent and the control plane on a keystroke's
// path); NATS carries it when the agent cannot make one.
const (
	// attachFlight bounds a stream's pushed output not yet credited: a
	// slow uplink holds the connection's pings behind at most that much.
	attachFlight = 256 << 10
	// attachFrameMax bounds the output of one pushed frame.
	attachFrameMax = 64 << 10
	// attachAckEvery: the agent tells the written stdin writes every this
	// many (and on every credit, and at once for a failed one). Such an
	// acknowledgement goes out with the next output: a keystroke's echo,
	// in the same write (one segment, one read and one wake-up at the
	// control plane, not two). Without output it goes alone once twice as
	// many writes, or attachAckBytes, are untold; a credit (at least
	// every keepalive, and at once when the control plane waits for
	// stdin to drain) is answered with it too.
	attachAckEvery = 16
	// attachAckBytes: stdin bytes written since the last acknowledgement
	// at which one goes at once, however few the writes (the control
	// plane holds at most 1 MiB unacknowledged, four or five writes of
	// wire.AttachWriteMax: a paste must not wait there for a credit).
	attachAckBytes = 256 << 10
	// maxAttachStreams bounds the open streams.
	maxAttachStreams = 1024
	// attachBulkLinger bounds how long a bulk stream's connection stays
	// open after the stream ended (for the control plane's half-close).
	attachBulkLinger = 2 * time.Second
)

// attachLease is how long a stream lives without a frame from the control
// plane (a variable for tests).
var attachLease = wire.AttachLease * time.Millisecond

// attachStreams are the agent's open attach streams, by stream id.
type attachStreams struct {
	a *Agent

	mu      sync.Mutex
	open    map[string]*attachStream
	closed  bool           // closeAll ran: no more streams
	readers sync.WaitGroup // the bulk streams' readers (readBulk); closeAll waits for them
}

// attachStream is one open stream.
type attachStream struct {
	a       *Agent
	h       *proc.Handle
	id      string // the stream id
	subject string
	prefix  string // of stdin write ids
	max     int

	mu      sync.Mutex // pushing; fields below
	started bool       // the first credit arrived
	ended   bool
	sent    uint64 // cursor of the last event pushed
	flight  int    // output bytes pushed, not yet credited
	marks   []flightMark
	enc     eventsEncoder // push's events frames
	unwatch func()
	lease   *time.Timer

	wmu      sync.Mutex // stdin; fields below
	accepted uint64     // the last write taken, in order
	written  uint64     // the last write done
	told     uint64     // the last write acknowledged to the control plane
	untold   int        // stdin bytes written since the last acknowledgement
	ackDue   bool       // an acknowledgement waits for output to go with
	owed     uint64     // a credit came while writes up to this were under way: told once written

	// bulk is the bulk connection the stream is on (nil: NATS); its
	// reader (readBulk) owns it and closes it.
	bulk net.Conn
	bmu  sync.Mutex // writes on bulk; bbuf
	bbuf []byte
}

// flightMark: output bytes pushed up to cursor next.
type flightMark struct {
	next  uint64
	bytes int
}

func (a *Agent) procAttach(ctx context.Context, req *wire.Request) (any, error) {
	b, err := decode[wire.ProcAttachRequest](req)
	if err != nil {
		return nil, err
	}
	h, err := a.procs.Handle(b.ID)
	if err != nil {
		return nil, err
	}
	if _, err := h.Peek(b.After, 1); err != nil {
		return nil, err
	}
	subj, err := a.id.Attach(b.Owner, b.Stream)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "attach: %v", err)
	}
	s := &attachStream{
		a: a, h: h, id: b.Stream, subject: subj, prefix: b.WritePrefix,
		max: min(max(b.MaxBytes, 1), attachFrameMax), sent: b.After,
		accepted: b.Writes, written: b.Writes, told: b.Writes,
	}
	var res wire.ProcAttachResult
	var r io.Reader
	if b.Ticket != "" {
		// The control plane asks for a bulk connection; failing that (or
		// soon after a failed one: dialStream), the stream's frames go
		// over NATS.
		var err error
		if s.bulk, r, err = a.bulkDialer().dialStream(ctx, b.Ticket); err != nil {
			a.log.Debug("attach stream: no bulk connection, frames over NATS", "err", err)
			s.bulk = nil
		} else {
			res.Bulk = true
			sizeBulkBuffer(s.bulk)
			// A keystroke's read and its echo's write on the connection:
			// direct system calls (rawio).
			wrapped := rawio.Wrap(s.bulk)
			if r == io.Reader(s.bulk) {
				r = wrapped
			}
			s.bulk = wrapped
		}
	}
	if err := a.attach.add(s); err != nil {
		if s.bulk != nil {
			s.bulk.Close()
		}
		return nil, err
	}
	if s.bulk != nil {
		// Ends with the connection: the stream's end closes it within
		// attachBulkLinger, closeAll at once (and waits for it).
		go func() { defer a.attach.readers.Done(); s.readBulk(r) }()
	}
	return &res, nil
}

// sizeBulkBuffer lets the kernel hold a stream's whole flight of output:
// pushing (in the process's pump) then never waits for the control plane
// to read.
func sizeBulkBuffer(c net.Conn) {
	if g := bulkconn.Under(c); g != nil {
		c = g.Conn
	}
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetWriteBuffer(2 * attachFlight)
	}
}

// readBulk takes the control plane's frames from the stream's bulk
// connection until it ends, then ends the stream and closes it.
func (s *attachStream) readBulk(r io.Reader) {
	defer s.bulk.Close()
	defer s.end("")
	br := bufio.NewReaderSize(r, 16<<10)
	var buf []byte // each frame's, reused; stdin, which the writer keeps, is copied out
	for {
		f, b, err := wire.ReadAttachBulkFrameInto(br, buf, true)
		if err != nil || f.Stream != s.id {
			return
		}
		if cap(b) <= 64<<10 {
			buf = b
		}
		if len(f.Data) > 0 {
			f.Data = bytes.Clone(f.Data)
		}
		if s.a.attach.get(s.id) != s {
			continue // ended: its frames are dropped, as over NATS (deliver); read on to the EOF
		}
		s.a.attach.frame(s, f)
	}
}

func (as *attachStreams) add(s *attachStream) error {
	as.mu.Lock()
	if as.open == nil {
		as.open = map[string]*attachStream{}
	}
	old := as.open[s.id]
	if as.closed {
		as.mu.Unlock()
		return wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentOffline, "agent is stopping")
	}
	if old == nil && len(as.open) >= maxAttachStreams {
		as.mu.Unlock()
		return wire.Errorf(wire.CodeUnavailable, wire.ReasonBusy, "%d attach streams are open", maxAttachStreams)
	}
	as.open[s.id] = s
	if s.bulk != nil {
		as.readers.Add(1) // its reader, which the caller starts
	}
	as.mu.Unlock()
	if old != nil {
		old.end("")
	}
	s.mu.Lock()
	s.lease = time.AfterFunc(attachLease, func() { s.end("no frame from the control plane for " + attachLease.String()) })
	s.unwatch = s.h.Watch(s.push)
	s.mu.Unlock()
	return nil
}

func (as *attachStreams) get(id string) *attachStream {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.open[id]
}

// closeAll ends every stream and refuses new ones: the agent stops (the
// connection they were on is gone). The bulk streams' connections are
// closed, and their readers waited for (at most stopGrace).
func (as *attachStreams) closeAll() {
	as.mu.Lock()
	as.closed = true
	var bulk []net.Conn
	for _, s := range as.open {
		if s.bulk != nil {
			bulk = append(bulk, s.bulk)
		}
	}
	as.mu.Unlock()
	as.endAll("")
	for _, c := range bulk {
		c.Close()
	}
	if !waitGrace(&as.readers) {
		as.a.log.Warn("attach streams' bulk readers did not end after their connections closed")
	}
}

// endAll ends every stream; with a reason, each says so.
func (as *attachStreams) endAll(reason string) {
	as.mu.Lock()
	all := make([]*attachStream, 0, len(as.open))
	for _, s := range as.open {
		all = append(all, s)
	}
	as.mu.Unlock()
	for _, s := range all {
		s.end(reason)
	}
}

// deliver takes one frame of the control plane (the rpc subscription's
// goroutine: it never blocks).
func (as *attachStreams) deliver(data []byte) {
	f, err := wire.DecodeAttachFrame(data, true)
	if err != nil {
		as.a.log.Debug("attach frame", "err", err)
		return
	}
	s := as.get(f.Stream)
	if s == nil || s.bulk != nil {
		return // a bulk stream's frames come on its connection only
	}
	as.frame(s, f)
}

// frame runs one frame of the control plane on stream s.
func (as *attachStreams) frame(s *attachStream, f wire.AttachFrame) {
	if as.a.paused.Load() {
		s.end("the machine's owner paused this agent")
		return
	}
	switch f.Kind {
	case wire.AttachClose:
		s.end("")
	case wire.AttachCredit:
		s.credit(f.N)
	case wire.AttachWrite, wire.AttachEOF:
		s.heard()
		s.write(f.N, f.Data, f.Kind == wire.AttachEOF)
	}
}

// heard extends the lease.
func (s *attachStream) heard() {
	s.mu.Lock()
	if !s.ended {
		s.lease.Reset(attachLease)
	}
	s.mu.Unlock()
}

// credit: every event up to n reached the client. The first one starts
// the pushing; every one is answered with the writes done (a keepalive
// both ways).
func (s *attachStream) credit(n uint64) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.lease.Reset(attachLease)
	s.started = true
	if n <= s.sent {
		_ = s.h.Ack(n)
		i := 0
		for ; i < len(s.marks) && s.marks[i].next <= n; i++ {
			s.flight -= s.marks[i].bytes
		}
		s.marks = s.marks[i:]
	}
	s.mu.Unlock()
	s.push()
	s.wmu.Lock()
	n = s.toldLocked()
	if s.accepted > s.written {
		s.owed = s.accepted // the control plane may be waiting for them (drainStdin)
	}
	s.wmu.Unlock()
	s.send(wire.AttachFrame{Kind: wire.AttachAck, N: n})
}

// toldLocked marks every write done as acknowledged, an acknowledgement
// due included, and returns the last; under wmu.
func (s *attachStream) toldLocked() uint64 {
	s.told, s.untold, s.ackDue = s.written, 0, false
	return s.written
}

// takeAck returns the acknowledgement due, if one is, to go out with
// the frame being sent: the writes done so far.
func (s *attachStream) takeAck() (uint64, bool) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !s.ackDue {
		return 0, false
	}
	return s.toldLocked(), true
}

// push sends the events not yet pushed, while the flight allows. It runs
// in whatever goroutine made an event (Watch) or a credit.
func (s *attachStream) push() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.started && !s.ended && s.flight < attachFlight {
		res, err := s.h.Peek(s.sent, s.max)
		if err != nil {
			s.endLocked(err.Error())
			return
		}
		if res.NextSeq <= s.sent && res.ClosedSeq == 0 {
			return // nothing new (a closed process is told once, even so)
		}
		body, n, err := s.enc.encode(res)
		if err != nil {
			s.endLocked(err.Error())
			return
		}
		if ack, ok := s.takeAck(); ok { // in the same write
			s.send(wire.AttachFrame{Kind: wire.AttachEvents, Data: body}, wire.AttachFrame{Kind: wire.AttachAck, N: ack})
		} else {
			s.send(wire.AttachFrame{Kind: wire.AttachEvents, Data: body}) // copies body out
		}
		if n > 0 {
			hoptrace.Mark(hoptrace.AgentSent)
		}
		s.sent = res.NextSeq
		s.flight += n
		s.marks = append(s.marks, flightMark{next: res.NextSeq, bytes: n})
		if res.ClosedSeq != 0 {
			s.endLocked("") // nothing follows closed
			return
		}
	}
}

// write takes stdin write n: in order, each once. A repeat of one done is
// acknowledged again; one past the next expected (an earlier frame was
// lost) is dropped, and the control plane sends again from the first
// unacknowledged.
func (s *attachStream) write(n uint64, data []byte, eof bool) {
	hoptrace.Mark(hoptrace.AgentStdin)
	s.wmu.Lock()
	switch {
	case n <= s.written:
		n = s.toldLocked()
		s.wmu.Unlock()
		s.send(wire.AttachFrame{Kind: wire.AttachAck, N: n})
		return
	case n != s.accepted+1:
		s.wmu.Unlock()
		return
	}
	s.accepted = n
	s.wmu.Unlock()
	wid := s.prefix + strconv.FormatUint(n, 10)
	size := len(data)
	if err := s.h.WriteAsync(wid, data, eof, func(err error) { s.done(n, size, err) }); err != nil {
		s.done(n, size, err)
	}
}

// done records the outcome of write n, of size bytes; a failure is told
// at once, the rest every attachAckEvery writes (with the next output;
// alone at twice as many), every attachAckBytes, on every credit, and as
// soon as the writes under way at the last credit are done.
func (s *attachStream) done(n uint64, size int, err error) {
	s.wmu.Lock()
	if n > s.written {
		s.written = n
	}
	s.untold += size
	if err == nil {
		untold := s.written - s.told
		owed := s.owed > s.told && s.written >= s.owed
		if untold < 2*attachAckEvery && s.untold < attachAckBytes && !owed {
			s.ackDue = s.ackDue || untold >= attachAckEvery
			s.wmu.Unlock()
			return
		}
		n = s.toldLocked() // none came with output: alone
		s.wmu.Unlock()
		s.send(wire.AttachFrame{Kind: wire.AttachAck, N: n})
		return
	}
	s.toldLocked()
	s.wmu.Unlock()
	f := wire.AttachFrame{Kind: wire.AttachAck, N: n}
	if b, merr := wire.Marshal(wireError(err)); merr == nil {
		f.Data = b
	}
	s.send(f)
}

// end ends the stream; with a reason, the control plane is told.
func (s *attachStream) end(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked(reason)
}

func (s *attachStream) endLocked(reason string) {
	if s.ended {
		return
	}
	s.ended = true
	if s.lease != nil {
		s.lease.Stop()
	}
	if s.unwatch != nil {
		s.unwatch() // the buffer's lock is never held while push runs
	}
	as := &s.a.attach
	as.mu.Lock()
	if as.open[s.id] == s {
		delete(as.open, s.id)
	}
	as.mu.Unlock()
	if reason != "" {
		s.send(wire.AttachFrame{Kind: wire.AttachEnd, Data: []byte(reason)})
	}
	if s.bulk != nil {
		// Nothing follows (a half-close: what was sent still arrives); the
		// control plane takes the EOF as the end and half-closes too, and
		// the reader, at that EOF or after attachBulkLinger, closes.
		_ = s.bulk.SetReadDeadline(time.Now().Add(attachBulkLinger))
		_ = closeWrite(s.bulk)
	}
}

// send sends frames on the stream's bulk connection, in one write, or
// publishes them on its subject, in order; a frame lost with the
// connection is the control plane's to notice (it opens a new stream).
func (s *attachStream) send(fs ...wire.AttachFrame) {
	if s.bulk != nil {
		s.bmu.Lock()
		s.bbuf = s.bbuf[:0]
		for _, f := range fs {
			s.bbuf = wire.AppendAttachBulkFrame(s.bbuf, f, false)
		}
		_ = s.bulk.SetWriteDeadline(time.Now().Add(bulkIdle))
		_, err := s.bulk.Write(s.bbuf)
		s.bmu.Unlock()
		if err != nil {
			s.a.log.Debug("attach stream bulk write", "err", err)
			_ = s.bulk.SetReadDeadline(time.Now()) // the reader ends the stream
		}
		return
	}
	nc := s.a.conn.Load()
	if nc == nil {
		return
	}
	for _, f := range fs {
		if err := nc.Publish(s.subject, wire.AppendAttachFrame(nil, f, false)); err != nil {
			s.a.log.Debug("attach stream publish", "err", err)
		}
	}
}

// closeWrite ends what the agent sends on c (TLS: close_notify; TCP: FIN)
// and keeps reading.
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
