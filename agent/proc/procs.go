package proc

import (
	"context"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Chunk is one piece of a process's output.
type Chunk struct {
	Seq    uint64
	Stream string // wire.StreamStdout, StreamStderr or StreamPTY
	Data   []byte // must not be modified
}

// ReadResult is what Read returns; see wire.ProcReadResult.
type ReadResult struct {
	Chunks    []Chunk
	NextSeq   uint64
	ExitSeq   uint64
	ExitCode  int
	TimedOut  bool
	ClosedSeq uint64
	Dropped   int64
}

// List describes every process not yet evicted, in start order.
func (m *Manager) List() []Info {
	m.mu.Lock()
	m.evictLocked(time.Now())
	ps := make([]*process, 0, len(m.order))
	for _, id := range m.order {
		if p := m.procs[id]; p != nil {
			ps = append(ps, p)
		}
	}
	m.mu.Unlock()
	out := make([]Info, len(ps))
	for i, p := range ps {
		out[i] = p.info()
	}
	return out
}

// Get describes process id; not_found when unknown or evicted.
func (m *Manager) Get(id string) (Info, error) {
	p, err := m.lookup(id)
	if err != nil {
		return Info{}, err
	}
	return p.info(), nil
}

// lookup finds process id, evicting what expired first.
func (m *Manager) lookup(id string) (*process, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evictLocked(time.Now())
	p := m.procs[id]
	if p == nil {
		return nil, wire.Errorf(wire.CodeNotFound, "", "no process %s", id)
	}
	return p, nil
}

// evictLocked forgets processes closed longer than retain ago: the clock
// starts at closed, not at exit.
func (m *Manager) evictLocked(now time.Time) {
	for _, id := range append([]string(nil), m.order...) {
		p := m.procs[id]
		if p == nil {
			continue
		}
		if at := p.closedSince(); !at.IsZero() && now.Sub(at) >= m.retain {
			m.removeLocked(id)
		}
	}
}

// Read returns the events after cursor after, at most maxBytes of output
// (0: wire.DefaultReadBytes; at least one chunk), and acknowledges
// everything up to after. When nothing follows after it waits up to wait
// for an event; it returns at once for new output, exit or close.
func (m *Manager) Read(ctx context.Context, id string, after uint64, maxBytes int, wait time.Duration) (ReadResult, error) {
	p, err := m.lookup(id)
	if err != nil {
		return ReadResult{}, err
	}
	if maxBytes <= 0 {
		maxBytes = wire.DefaultReadBytes
	}
	maxBytes = min(maxBytes, wire.MaxReadBytes)
	var timer <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	}
	for {
		ch, done := p.out.waitChange()
		res, ok := p.out.read(after, maxBytes)
		if !ok {
			done()
			return ReadResult{}, wire.Errorf(wire.CodeInvalidArgument, "", "after %d is beyond the last event of process %s", after, id)
		}
		if len(res.chunks) > 0 || res.next > after || res.closedSeq != 0 || timer == nil {
			done()
			return toReadResult(res), nil
		}
		select {
		case <-ch:
			done()
		case <-timer:
			done()
			timer = nil
		case <-ctx.Done():
			done()
			timer = nil
		}
	}
}

func toReadResult(r readResult) ReadResult {
	out := ReadResult{
		NextSeq: r.next, ExitSeq: r.exitSeq, ExitCode: r.exitCode, TimedOut: r.timedOut,
		ClosedSeq: r.closedSeq, Dropped: r.dropped, Chunks: make([]Chunk, len(r.chunks)),
	}
	for i, c := range r.chunks {
		out.Chunks[i] = Chunk{Seq: c.seq, Stream: c.stream.String(), Data: c.data}
	}
	return out
}

// Write feeds process id's stdin: data, then EOF when eof. A writeID seen
// before (among the latest 4096) is acknowledged without writing again.
// Errors: not_found, conflict/not_running once the process exited,
// conflict when it has no stdin or stdin was closed.
func (m *Manager) Write(ctx context.Context, id, writeID string, data []byte, eof bool) error {
	p, err := m.lookup(id)
	if err != nil {
		return err
	}
	if p.in == nil {
		return wire.Errorf(wire.CodeConflict, wire.ReasonNoStdin, "process %s was started without stdin", id)
	}
	if !p.running() {
		return notRunning(id)
	}
	return p.in.write(ctx, id, writeID, data, eof)
}

// Signal sends a signal of the allow-list (INT TERM KILL HUP QUIT USR1
// USR2) to process id's group. STOP and CONT are refused: a stopped process
// looks idle. Errors: invalid_argument, not_found, conflict/not_running.
func (m *Manager) Signal(id, name string) error {
	sig, ok := signals[name]
	if !ok {
		return wire.Errorf(wire.CodeInvalidArgument, "", "signal %q is not one of INT TERM KILL HUP QUIT USR1 USR2", name)
	}
	p, err := m.lookup(id)
	if err != nil {
		return err
	}
	return p.signalLive(sig)
}

// Resize sets process id's terminal size. Errors: invalid_argument,
// not_found, conflict/not_a_tty, conflict/not_running.
func (m *Manager) Resize(id string, cols, rows int) error {
	if cols < 1 || rows < 1 || cols > 0xffff || rows > 0xffff {
		return wire.Errorf(wire.CodeInvalidArgument, "", "terminal size %dx%d: cols and rows must be 1 to 65535", cols, rows)
	}
	p, err := m.lookup(id)
	if err != nil {
		return err
	}
	if !p.tty {
		return wire.Errorf(wire.CodeConflict, wire.ReasonNotATTY, "process %s has no terminal", id)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exitedAt.IsZero() {
		return notRunning(id)
	}
	if err := resizePTY(p.io.pty, cols, rows); err != nil {
		return wire.Errorf(wire.CodeInternal, "", "resize process %s: %v", id, err)
	}
	return nil
}

// Terminate ends process id's group: TERM now, KILL after the grace. It
// reports whether the process was running; it does not wait for the end.
func (m *Manager) Terminate(id string) (wasRunning bool, err error) {
	p, err := m.lookup(id)
	if err != nil {
		return false, err
	}
	if !p.running() {
		return false, nil
	}
	p.stop(errTerminated)
	return true, nil
}

// Wait blocks until process id closed or ctx ends; for tests and callers
// that need the end.
func (m *Manager) Wait(ctx context.Context, id string) (Info, error) {
	p, err := m.lookup(id)
	if err != nil {
		return Info{}, err
	}
	select {
	case <-p.closed:
		return p.info(), nil
	case <-ctx.Done():
		return p.info(), ctx.Err()
	}
}

// Handle is one streaming process, for an attach stream: its calls need no
// lookup, and keep working on the process after it was evicted.
type Handle struct {
	id string
	p  *process
}

// Handle finds streaming process id; not_found when unknown or evicted.
func (m *Manager) Handle(id string) (*Handle, error) {
	p, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	return &Handle{id: id, p: p}, nil
}

// Watch runs fn after every new event of the process (output, exit,
// closed), in the goroutine that added it, outside the buffer's lock: an
// attach stream pushes from there. fn must not block for long (it delays
// the process's output) and must not call Manager methods (it may run
// under the process's lock). Until stop, the process has an attached
// reader, as during a waiting Read (flow control, hangup).
func (h *Handle) Watch(fn func()) (stop func()) { return h.p.out.watch(fn) }

// Peek returns what Read would at once, without acknowledging anything
// (an attach stream sends ahead of its acknowledgements, Ack).
func (h *Handle) Peek(after uint64, maxBytes int) (ReadResult, error) {
	if maxBytes <= 0 {
		maxBytes = wire.DefaultReadBytes
	}
	res, ok := h.p.out.peek(after, min(maxBytes, wire.MaxReadBytes))
	if !ok {
		return ReadResult{}, wire.Errorf(wire.CodeInvalidArgument, "", "after %d is beyond the last event of process %s", after, h.id)
	}
	return toReadResult(res), nil
}

// Ack acknowledges every event up to after, as a Read of after does.
func (h *Handle) Ack(after uint64) error {
	if !h.p.out.acknowledge(after) {
		return wire.Errorf(wire.CodeInvalidArgument, "", "after %d is beyond the last event of process %s", after, h.id)
	}
	return nil
}

// WriteAsync is Manager.Write without the wait: it accepts the write
// (exactly once by writeID, as Write) and returns; done gets its outcome
// once written, from the process's stdin writer.
func (h *Handle) WriteAsync(writeID string, data []byte, eof bool, done func(error)) error {
	if h.p.in == nil {
		return wire.Errorf(wire.CodeConflict, wire.ReasonNoStdin, "process %s was started without stdin", h.id)
	}
	if !h.p.running() {
		return notRunning(h.id)
	}
	return h.p.in.writeAsync(h.id, writeID, data, eof, done)
}
