package proc

import (
	"crypto/rand"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/outposthq/outpost/wire"
)

// pumpChunk is the size of one read from an output pipe or PTY: a full
// Linux pipe.
const pumpChunk = 64 << 10

// newLimits derives a process's output limits from the configured total.
func newLimits(bytes int, grace time.Duration) limits {
	if bytes <= 0 {
		bytes = DefaultBufferBytes
	}
	// The window is a quarter: the rest keeps history that a reader who
	// lost what was in flight to it can still resume from.
	return limits{
		bytes: bytes, chunks: DefaultBufferChunks,
		window: bytes / 4, windowChunks: DefaultBufferChunks / 4,
		grace: orDefault(grace, DefaultReaderGrace),
	}
}

// Start starts a streaming process (see API.md "Processes") and returns its
// id and pid. Two starts with one id: exactly one wins, the other is
// conflict/already_exists.
//
// Errors: invalid_argument, conflict/already_exists,
// permission_denied/outside_root, not_found/executable_not_found,
// unsupported (a TTY where there are none), unavailable/busy (MaxProcesses
// are alive), unavailable (the Manager closed).
func (m *Manager) Start(req StartRequest) (id string, pid int, err error) {
	if err := validateStart(&req); err != nil {
		return "", 0, err
	}
	if id, err = m.reserve(req.ID); err != nil {
		return "", 0, err
	}
	p, err := m.launch(id, &req)
	if err != nil {
		m.unreserve(id)
		return "", 0, err
	}
	return id, p.pid, nil
}

func validateStart(req *StartRequest) error {
	if err := wire.ValidCommand("a process", req.Argv, req.Command); err != nil {
		return err
	}
	if err := wire.ValidCwdEnv(req.Cwd, req.Env); err != nil {
		return err
	}
	switch {
	case req.Timeout < 0:
		return wire.Errorf(wire.CodeInvalidArgument, "", "timeout must not be negative")
	case req.TTY && !PTYSupported:
		return wire.Errorf(wire.CodeUnsupported, "", "this agent cannot run processes on a terminal")
	}
	if req.ID != "" {
		if err := wire.ValidProcID(req.ID); err != nil {
			return err
		}
	}
	if req.TTY {
		req.Stdin = true
		if req.Cols == 0 {
			req.Cols = wire.DefaultCols
		}
		if req.Rows == 0 {
			req.Rows = wire.DefaultRows
		}
		if req.Cols < 1 || req.Rows < 1 || req.Cols > 0xffff || req.Rows > 0xffff {
			return wire.Errorf(wire.CodeInvalidArgument, "", "terminal size %dx%d: cols and rows must be 1 to 65535", req.Cols, req.Rows)
		}
	}
	return nil
}

// reserve claims id (or a new one) in the table, evicting what expired.
func (m *Manager) reserve(id string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", closedError()
	}
	m.evictLocked(time.Now())
	if id == "" {
		id = "p" + strings.ToLower(rand.Text()[:12])
	}
	if _, ok := m.procs[id]; ok {
		return "", wire.Errorf(wire.CodeConflict, wire.ReasonAlreadyExists, "process %s already exists", id)
	}
	if err := m.takeSlotLocked(); err != nil {
		return "", err
	}
	m.procs[id] = nil // reserved: starting
	m.order = append(m.order, id)
	return id, nil
}

// unreserve forgets id, which did not start, and frees its slot.
func (m *Manager) unreserve(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(id)
	m.live--
}

func (m *Manager) removeLocked(id string) {
	delete(m.procs, id)
	for i, o := range m.order {
		if o == id {
			m.order = append(m.order[:i:i], m.order[i+1:]...)
			break
		}
	}
}

// launch starts the reserved process id and its supervisor.
func (m *Manager) launch(id string, req *StartRequest) (*process, error) {
	cmd, err := m.command(req.Argv, req.Command, req.Cwd, req.Env)
	if err != nil {
		return nil, err
	}
	p := &process{
		id: id, argv: cmd.Args, tty: req.TTY, detached: req.Detached, cmd: cmd,
		term: make(chan struct{}), exited: make(chan struct{}), closed: make(chan struct{}),
	}
	ends, pumps, stdinW, err := p.attach(req)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "", "process %s: %v", id, err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		closeAll(ends)
		closeAll(pumpFiles(pumps))
		closeAll([]*os.File{stdinW})
		return nil, closedError()
	}
	m.procWG.Add(1)
	m.mu.Unlock()
	p.started = time.Now()
	p.out = newOutbuf(m.lim, req.Detached, p.started)
	if err := cmd.Start(); err != nil {
		m.procWG.Done()
		closeAll(ends)
		closeAll(pumpFiles(pumps))
		closeAll([]*os.File{stdinW})
		return nil, startFailed(cmd, err)
	}
	p.pid = cmd.Process.Pid
	if stdinW != nil {
		p.in = newStdinWriter(stdinW, req.TTY)
	}
	var slave *os.File
	if req.TTY {
		slave = ends[0] // kept open while the leader lives
	} else {
		closeAll(ends)
	}
	m.mu.Lock()
	m.procs[id] = p
	m.mu.Unlock()
	m.log.Debug("process started", "id", id, "pid", p.pid, "argv", cmd.Args, "tty", req.TTY)
	go m.supervise(p, pumps, slave, req.Timeout)
	return p, nil
}

// pumpSource is one output file and the stream it feeds.
type pumpSource struct {
	f *os.File
	s stream
}

func pumpFiles(ps []pumpSource) []*os.File {
	fs := make([]*os.File, len(ps))
	for i, p := range ps {
		fs[i] = p.f
	}
	return fs
}

// attach sets up cmd's stdio: a PTY, or pipes for stdout and stderr and, with
// Stdin, for stdin. It returns the child's ends (closed here after start;
// for a PTY the slave), the files to pump and the stdin write end (nil
// without stdin).
func (p *process) attach(req *StartRequest) (ends []*os.File, pumps []pumpSource, stdinW *os.File, err error) {
	if req.TTY {
		master, slave, err := attachPTY(p.cmd, req.Cols, req.Rows)
		if err != nil {
			return nil, nil, nil, err
		}
		p.pty = master
		return []*os.File{slave}, []pumpSource{{master, streamPTY}}, master, nil
	}
	var files []*os.File
	fail := func(err error) ([]*os.File, []pumpSource, *os.File, error) {
		closeAll(files)
		return nil, nil, nil, err
	}
	for _, s := range []stream{streamStdout, streamStderr} {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		files = append(files, r, w)
		ends = append(ends, w)
		pumps = append(pumps, pumpSource{r, s})
	}
	p.cmd.Stdout, p.cmd.Stderr = ends[0], ends[1]
	if req.Stdin {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		ends = append(ends, r)
		p.cmd.Stdin, stdinW = r, w
	}
	return ends, pumps, stdinW, nil
}

// supervise owns the process's life: it enforces the timeout, terminate and
// the Manager's close; after the leader exits it collects the tail of the
// output (see drain), kills what is left of the group, ends every stream
// and records closed.
func (m *Manager) supervise(p *process, pumps []pumpSource, slave *os.File, timeout time.Duration) {
	defer m.procWG.Done()
	stopWait := make(chan struct{}) // pumps stop waiting for a reader
	var pumpWG sync.WaitGroup
	for _, src := range pumps {
		pumpWG.Add(1)
		go func() { defer pumpWG.Done(); p.pump(src, stopWait) }()
	}
	pumpsDone := make(chan struct{})
	go func() { pumpWG.Wait(); close(pumpsDone) }()
	go p.waitLeader()

	m.untilExit(p, timeout, stopWait)
	if slave != nil {
		_ = slave.Close() // now the master reads EIO once the rest let go
	}
	m.drain(p, pumpsDone)
	p.kill(m)
	closeOnce(stopWait)
	if !waitFor(pumpsDone, eofGrace) {
		closeAll(pumpFiles(pumps)) // held by a process that escaped the group
	}
	if !waitFor(pumpsDone, joinTimeout) {
		m.log.Warn("process: output pumps did not end", "id", p.id)
	}
	if p.in != nil {
		p.in.shutdown()
	}
	if p.pty != nil {
		_ = p.pty.Close()
	}
	if p.in != nil {
		<-p.in.done
	}
	closeAll(pumpFiles(pumps))
	m.freeSlot()
	p.markClosed()
	m.log.Debug("process closed", "id", p.id, "pid", p.pid)
}

// untilExit waits for the leader to exit, killing the group on timeout, on
// the Manager's close, and after terminate's TERM and grace.
func (m *Manager) untilExit(p *process, timeout time.Duration, stopWait chan struct{}) {
	var timeoutC, killC <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	term, closing := p.term, m.closing.Done()
	for {
		select {
		case <-p.exited:
			return
		case <-timeoutC:
			timeoutC = nil
			p.mu.Lock()
			p.timedOut = true
			p.mu.Unlock()
			p.kill(m)
		case <-term:
			term = nil
			_ = p.signalLive(termSignal)
			t := time.NewTimer(m.termGrace)
			defer t.Stop()
			killC = t.C
		case <-killC:
			killC = nil
			p.kill(m)
		case <-closing:
			closing = nil
			closeOnce(stopWait)
			p.kill(m)
		}
	}
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// drain collects output written after the leader exited by children that
// hold its streams: until every stream ends, or drainQuiet passes without
// output, or drainMax has passed since exit, whichever is first; while a
// pump waits for a slow reader the output is not quiet, bounded by
// drainHardMax.
func (m *Manager) drain(p *process, pumpsDone <-chan struct{}) {
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-pumpsDone:
			return
		case <-m.closing.Done():
			return
		case <-tick.C:
		}
		last, waiting := p.out.activity()
		now := time.Now()
		if last.Before(start) {
			last = start
		}
		switch {
		case now.Sub(start) >= drainHardMax:
			return
		case waiting:
		case now.Sub(last) >= drainQuiet, now.Sub(start) >= drainMax:
			return
		}
	}
}

// pump moves one stream into the output log until it ends: EOF, a PTY's
// EIO, or the file closed here.
func (p *process) pump(src pumpSource, stopWait <-chan struct{}) {
	buf := make([]byte, pumpChunk)
	for {
		p.out.admit(stopWait)
		n, err := src.f.Read(buf)
		if n > 0 {
			p.out.append(src.s, append([]byte(nil), buf[:n]...))
		}
		if err != nil {
			return // io.EOF, EIO of a PTY, or closed: the stream's end
		}
	}
}

// waitLeader records the leader's exit. Where it can, it reaps the leader
// under the lock that signals take, so no signal reaches a reused pid.
func (p *process) waitLeader() {
	noReap := waitNoReap(p.cmd.Process)
	var err error
	if !noReap {
		err = p.cmd.Wait()
	}
	p.mu.Lock()
	if noReap {
		err = p.cmd.Wait()
	}
	code := -1
	if ps := p.cmd.ProcessState; ps != nil {
		code = exitCode(ps)
	}
	if p.timedOut {
		code = TimeoutExitCode
	}
	p.exitedAt, p.exitCode = time.Now(), code
	p.out.exit(code, p.timedOut)
	p.mu.Unlock()
	_ = err // the state says everything a caller needs
	close(p.exited)
}

// kill kills the process group.
func (p *process) kill(m *Manager) {
	if err := killGroup(p.cmd.Process); err != nil {
		m.log.Warn("process: kill group", "id", p.id, "pid", p.pid, "err", err)
	}
}

func (p *process) markClosed() {
	p.mu.Lock()
	p.out.close()
	p.closedAt = time.Now()
	p.mu.Unlock()
	close(p.closed)
}
