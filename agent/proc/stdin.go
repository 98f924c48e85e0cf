package proc

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/outposthq/outpost/internal/hoptrace"
	"github.com/outposthq/outpost/wire"
)

// maxPendingStdin bounds the stdin bytes queued for a process that does not
// read them; more is unavailable/busy until it catches up.
const maxPendingStdin = 16 << 20

// ptyEOF is what eof writes to a terminal: the VEOF character, Ctrl-D.
const ptyEOF = 0x04

// writeOp is one accepted stdin write.
type writeOp struct {
	data []byte
	eof  bool
	done chan struct{} // closed once written (or failed)
	err  error         // set before done closes

	// Under stdinWriter.mu: finished once err is set; notify run then.
	finished bool
	notify   []func(error)
}

// stdinWriter feeds a process's stdin from one goroutine, in the order
// writes were accepted, so a write blocked on a full pipe delays only later
// writes, never terminate, resize or exit. Write ids are remembered (the
// latest maxWriteIDs) as soon as a write is accepted: a repeat waits for the
// first and answers as it did, and never writes twice.
type stdinWriter struct {
	w   *os.File // pipe write end, or the PTY master
	tty bool     // eof writes ptyEOF instead of closing w

	mu      sync.Mutex
	ids     map[string]*writeOp
	order   []string // ids, oldest first
	queue   []*writeOp
	pending int  // bytes queued
	eof     bool // an eof write was accepted
	shut    bool
	busy    bool                     // the goroutine is writing an op
	now     func([]byte) (int, bool) // a write that never blocks, or nil (writeNow)
	wake    chan struct{}
	done    chan struct{} // closed when the goroutine ends
}

func newStdinWriter(w *os.File, tty bool) *stdinWriter {
	s := &stdinWriter{w: w, tty: tty, ids: map[string]*writeOp{}, wake: make(chan struct{}, 1), done: make(chan struct{}), now: writeNow(w)}
	go s.loop()
	return s
}

// write accepts data (then EOF when eof) and waits until it is written or
// ctx ends; in the latter case the write still happens, and a retry with
// the same id waits for it.
func (s *stdinWriter) write(ctx context.Context, id, wid string, data []byte, eof bool) error {
	op := s.direct(wid, data, eof)
	if op == nil {
		var err error
		if op, err = s.accept(id, wid, data, eof); err != nil {
			return err
		}
	}
	select {
	case <-op.done:
		return op.err
	case <-ctx.Done():
		return wire.Errorf(wire.CodeDeadlineExceeded, "", "stdin of process %s: write still pending (retry with the same writeId)", id)
	}
}

// writeAsync accepts data (then EOF when eof) as write wid and returns at
// once; fn gets the write's outcome once written, in the writer's goroutine
// (or in this one, for a repeat of a write already done).
func (s *stdinWriter) writeAsync(id, wid string, data []byte, eof bool, fn func(error)) error {
	op := s.direct(wid, data, eof)
	if op == nil {
		var err error
		if op, err = s.accept(id, wid, data, eof); err != nil {
			return err
		}
	}
	s.mu.Lock()
	if op.finished {
		s.mu.Unlock()
		fn(op.err)
		return nil
	}
	op.notify = append(op.notify, fn)
	s.mu.Unlock()
	return nil
}

// finish records op's outcome and tells whoever waits.
func (s *stdinWriter) finish(op *writeOp, err error) {
	s.mu.Lock()
	op.err, op.finished = err, true
	ns := op.notify
	op.notify = nil
	s.mu.Unlock()
	close(op.done)
	for _, fn := range ns {
		fn(err)
	}
}

// direct writes data at once, from the caller's goroutine, when nothing is
// queued before it and the file takes it without blocking (a keystroke on
// a PTY: no handoff to the writer's goroutine). It returns the write, done
// (or, when the file took part, its rest queued), remembered by wid; nil
// when nothing was written: accept queues it.
func (s *stdinWriter) direct(wid string, data []byte, eof bool) *writeOp {
	if s.now == nil || eof || len(data) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shut || s.eof || s.busy || len(s.queue) > 0 || wid != "" && s.ids[wid] != nil {
		return nil
	}
	n, ok := s.now(data)
	var op *writeOp
	switch {
	case !ok:
		return nil
	case n < len(data): // the rest through the queue, in order
		op = s.enqueueLocked(data[n:], false)
	default:
		hoptrace.Mark(hoptrace.PTYWritten)
		op = &writeOp{finished: true, done: closedChan}
	}
	s.rememberLocked(wid, op)
	return op
}

// closedChan is the done of a write made at once.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (s *stdinWriter) rememberLocked(wid string, op *writeOp) {
	if wid == "" {
		return
	}
	s.ids[wid] = op
	s.order = append(s.order, wid)
	if len(s.order) > maxWriteIDs {
		delete(s.ids, s.order[0])
		s.order = s.order[1:]
	}
}

func (s *stdinWriter) accept(id, wid string, data []byte, eof bool) (*writeOp, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op := s.ids[wid]; wid != "" && op != nil {
		return op, nil
	}
	switch {
	case s.shut:
		return nil, notRunning(id)
	case s.eof:
		return nil, wire.Errorf(wire.CodeConflict, wire.ReasonStdinClosed, "stdin of process %s is closed", id)
	case s.pending+len(data) > maxPendingStdin:
		return nil, wire.Errorf(wire.CodeUnavailable, wire.ReasonBusy, "stdin of process %s has %d bytes queued; retry later", id, s.pending)
	}
	op := s.enqueueLocked(data, eof)
	s.rememberLocked(wid, op)
	return op, nil
}

// feed queues an Exec's stdin: data, then EOF. It bypasses the limit on
// queued bytes, which the request's size already bounds.
func (s *stdinWriter) feed(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enqueueLocked(data, true)
}

func (s *stdinWriter) enqueueLocked(data []byte, eof bool) *writeOp {
	op := &writeOp{data: data, eof: eof, done: make(chan struct{})}
	s.queue = append(s.queue, op)
	s.pending += len(data)
	s.eof = eof
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return op
}

// loop writes queued ops until shutdown.
func (s *stdinWriter) loop() {
	defer close(s.done)
	for {
		op, ok := s.next()
		if !ok {
			return
		}
		err := s.do(op)
		s.mu.Lock()
		s.pending -= len(op.data)
		s.busy = false
		s.mu.Unlock()
		s.finish(op, err)
	}
}

// next waits for the next op; false once shut down (queued ops fail).
func (s *stdinWriter) next() (*writeOp, bool) {
	s.mu.Lock()
	for len(s.queue) == 0 && !s.shut {
		s.mu.Unlock()
		<-s.wake
		s.mu.Lock()
	}
	if s.shut {
		q := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, op := range q {
			s.finish(op, errStdinShut)
		}
		return nil, false
	}
	defer s.mu.Unlock()
	s.busy = true
	op := s.queue[0]
	s.queue = s.queue[1:]
	return op, true
}

var errStdinShut = wire.Errorf(wire.CodeConflict, wire.ReasonNotRunning, "process is not running")

func (s *stdinWriter) do(op *writeOp) error {
	if len(op.data) > 0 {
		if _, err := s.w.Write(op.data); err != nil {
			return stdinError(err)
		}
		hoptrace.Mark(hoptrace.PTYWritten)
	}
	if !op.eof {
		return nil
	}
	if s.tty {
		_, err := s.w.Write([]byte{ptyEOF})
		return stdinError(err)
	}
	return stdinError(s.w.Close())
}

func stdinError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EPIPE), errors.Is(err, os.ErrClosed), errors.Is(err, io.ErrClosedPipe), errors.Is(err, syscall.EIO):
		return errStdinShut
	default:
		return wire.Errorf(wire.CodeInternal, "", "write stdin: %v", err)
	}
}

// shutdown fails what is queued, ends the goroutine and waits for it. A
// pipe is closed first, which also ends a write blocked on it; a PTY master
// is closed by its owner.
func (s *stdinWriter) shutdown() {
	s.mu.Lock()
	s.shut = true
	s.mu.Unlock()
	if !s.tty {
		_ = s.w.Close()
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
