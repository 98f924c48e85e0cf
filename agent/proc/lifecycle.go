package proc

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/outposthq/outpost/internal/hoptrace"
	"github.com/outposthq/outpost/internal/rawio"
	"github.com/outposthq/outpost/wire"
)

// After the leader exits, the output of children still holding its streams
// is collected (the drain) until every stream ends, drainQuiet passes
// without output, or drainMax passes, whichever is first; while a pump
// waits for a slow attached reader the output is not quiet, up to
// drainHardMax. A stop that kills (timeout, the Manager's close, the end of
// an Exec's context) ends it at once. Then the rest of the group is killed.
const (
	drainQuiet   = 300 * time.Millisecond
	drainMax     = 2 * time.Second
	drainHardMax = 30 * time.Second
	drainPoll    = 50 * time.Millisecond // while a pump waits for a reader
)

// spec is a process to launch: an Exec's or a streaming one.
type spec struct {
	id         string // empty for an Exec
	argv       []string
	command    string
	cwd        string
	env        map[string]string
	tty        bool
	cols, rows int
	stdin      bool   // a stdin pipe
	input      []byte // queued on stdin, then EOF
	detached   bool
	hangup     bool          // SIGHUP once no reader is attached (see StartRequest)
	timeout    time.Duration // 0: none
	sink       sink
	out        *outbuf // the sink of a streaming process
}

// launch starts s and its supervisor; the process holds a slot until its
// group is gone. Ending ctx stops it as a timeout does (an Exec's request).
// Errors are *wire.Error: as command's, unavailable/busy, unavailable when
// the Manager closed, internal.
func (m *Manager) launch(ctx context.Context, s spec) (*process, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, closedError()
	}
	if err := m.takeSlotLocked(); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	m.procWG.Add(1)
	m.mu.Unlock()
	p, life, err := m.start(s)
	if err != nil {
		m.freeSlot()
		m.procWG.Done()
		return nil, err
	}
	go m.supervise(ctx, life, p, s.timeout)
	return p, nil
}

// start starts the process of s in its group. The process stops when life
// is cancelled, with the cause saying why (see errTerminated): exec.Cmd
// then calls interrupt.
func (m *Manager) start(s spec) (*process, context.Context, error) {
	life, stop := context.WithCancelCause(context.Background())
	cmd, err := m.command(life, s.argv, s.command, s.cwd, s.env)
	if err != nil {
		stop(nil)
		return nil, nil, err
	}
	io, err := attach(cmd, s.tty, s.cols, s.rows, s.stdin)
	if err != nil {
		stop(nil)
		return nil, nil, wire.Errorf(wire.CodeInternal, "", "start %s: %v", cmd.Args[0], err)
	}
	p := &process{
		id: s.id, argv: cmd.Args, tty: s.tty, detached: s.detached, hangup: s.hangup, cmd: cmd, log: m.log,
		grace: m.termGrace, sink: s.sink, out: s.out, io: io, stop: stop, stopWait: make(chan struct{}),
		exited: make(chan struct{}), killed: make(chan struct{}), reaped: make(chan struct{}), closed: make(chan struct{}),
	}
	cmd.Cancel = func() error { return p.interrupt(context.Cause(life)) }
	unblockChildSignals(cmd)
	bx, err := m.boxFor(cmd)
	if err != nil {
		io.abort()
		stop(nil)
		return nil, nil, wire.Errorf(wire.CodeUnavailable, "", "start %s: cannot apply the owner's limits: %v", cmd.Args[0], err)
	}
	p.box = bx
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		io.abort()
		stop(nil)
		p.releaseBox()
		return nil, nil, startFailed(cmd, err)
	}
	if bx != nil {
		if err := bx.place(cmd.Process.Pid); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			io.abort()
			stop(nil)
			p.releaseBox()
			return nil, nil, wire.Errorf(wire.CodeUnavailable, "", "start %s: cannot apply the owner's limits: %v", cmd.Args[0], err)
		}
	}
	g, err := newGroup(cmd.Process)
	if err != nil { // cmd.Process was killed
		_ = cmd.Wait()
		io.abort()
		stop(nil)
		return nil, nil, wire.Errorf(wire.CodeInternal, "", "start %s: %v", cmd.Args[0], err)
	}
	io.started()
	p.pid, p.group = cmd.Process.Pid, g
	if io.stdin != nil {
		p.in = newStdinWriter(io.stdin, s.tty)
		if s.input != nil {
			p.in.feed(s.input)
		}
	}
	m.log.Debug("process started", "id", p.id, "pid", p.pid, "argv", cmd.Args, "dir", cmd.Dir, "tty", s.tty)
	return p, life, nil
}

// supervise owns the process's life: it stops it on timeout, when ctx ends
// or the Manager closes, and escalates a graceful stop; after the leader
// exits it drains the output, kills what is left of the group, ends every
// stream, waits for the leader to be reaped, frees the slot and records
// closed.
func (m *Manager) supervise(ctx, life context.Context, p *process, timeout time.Duration) {
	defer m.procWG.Done()
	defer context.AfterFunc(m.closing, func() { p.stop(errClosed) })()
	defer context.AfterFunc(ctx, func() { p.stop(context.Cause(ctx)) })()
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { p.stop(errTimedOut) })
		defer t.Stop()
	}
	var pumps sync.WaitGroup
	for _, src := range p.io.pumps {
		pumps.Add(1)
		go func() { defer pumps.Done(); p.pump(src) }()
	}
	pumpsDone := make(chan struct{})
	go func() { pumps.Wait(); close(pumpsDone) }()
	go p.wait()
	if p.hangup {
		hungUp := make(chan struct{})
		go func() { defer close(hungUp); p.watchHangup() }()
		defer func() { <-hungUp }() // it ends when the leader exits
	}

	closing := m.closing.Done()
	p.untilExit(life, closing)
	closeAll([]*os.File{p.io.slave}) // now the master reads EIO once the rest let go
	p.drain(life, pumpsDone, closing)
	p.kill()
	close(p.killed)
	p.releasePumps()
	if !waitFor(pumpsDone, eofGrace) {
		closeAll(p.io.pumpFiles()) // held by a process that escaped the group
	}
	join := time.Now().Add(joinTimeout)
	if !waitFor(pumpsDone, time.Until(join)) {
		m.log.Warn("process: output pumps did not end", "id", p.id, "pid", p.pid)
	}
	if p.in != nil {
		p.in.shutdown()
	}
	closeAll([]*os.File{p.io.pty})
	if p.in != nil && !waitFor(p.in.done, time.Until(join)) {
		m.log.Warn("process: stdin writer did not end", "id", p.id, "pid", p.pid)
	}
	<-p.reaped
	p.releaseBox()
	p.group.close()
	closeAll(p.io.pumpFiles())
	p.stop(nil)
	m.freeSlot()
	p.markClosed()
	m.log.Debug("process closed", "id", p.id, "pid", p.pid, "exit", p.exitCode, "duration", time.Since(p.started))
}

// untilExit waits for the leader to exit. A stop has its Cancel (interrupt)
// send TERM or KILL; after a graceful one the group is killed when the
// grace has passed. The Manager's close kills at once, even during a grace.
func (p *process) untilExit(life context.Context, closing <-chan struct{}) {
	var killC <-chan time.Time
	stopped := life.Done()
	for {
		select {
		case <-p.exited:
			return
		case <-stopped:
			stopped = nil
			if errors.Is(context.Cause(life), errTerminated) {
				t := time.NewTimer(p.grace)
				defer t.Stop()
				killC = t.C
			}
		case <-killC:
			killC = nil
			p.kill()
		case <-closing:
			closing = nil
			p.releasePumps()
			_ = p.interrupt(errClosed)
		}
	}
}

// drain collects the output written after the leader exited (see
// drainQuiet).
func (p *process) drain(life context.Context, pumpsDone, closing <-chan struct{}) {
	start := time.Now()
	t := time.NewTimer(drainQuiet)
	defer t.Stop()
	stopped := life.Done()
	for {
		select {
		case <-pumpsDone:
			return
		case <-closing:
			return
		case <-stopped:
			if !errors.Is(context.Cause(life), errTerminated) {
				return
			}
			stopped = nil
			continue
		case <-t.C:
		}
		now := time.Now()
		last := max(p.lastOut.Load(), start.UnixNano())
		idle := now.Sub(time.Unix(0, last))
		switch {
		case now.Sub(start) >= drainHardMax:
			return
		case p.sink.waiting():
			t.Reset(drainPoll)
		case idle >= drainQuiet, now.Sub(start) >= drainMax:
			return
		default:
			t.Reset(min(drainQuiet-idle, drainMax-now.Sub(start)))
		}
	}
}

// pump moves one stream into the sink until it ends: EOF, a PTY's EIO, or
// the file closed here.
func (p *process) pump(src pumpSource) {
	buf := make([]byte, pumpChunk)
	in := rawio.File(src.f) // an echo's read: a direct system call
	for {
		p.sink.admit(p.stopWait)
		p.lastOut.Store(time.Now().UnixNano())
		n, err := in.Read(buf)
		if n > 0 {
			hoptrace.Mark(hoptrace.PTYRead)
			p.sink.write(src.s, buf[:n])
			p.lastOut.Store(time.Now().UnixNano())
		}
		if err != nil {
			return
		}
	}
}

// releasePumps makes the pumps stop waiting for a reader, for good.
func (p *process) releasePumps() { p.stopOnce.Do(func() { close(p.stopWait) }) }

// wait is the one goroutine that calls cmd.Wait. It records the leader's
// exit; where it can (see waitExit) it leaves the leader unreaped until the
// rest of the group was killed, so the group's id stays reserved.
func (p *process) wait() {
	code, zombie := waitExit(p.cmd.Process)
	var err error
	if !zombie {
		err = p.cmd.Wait()
	}
	p.mu.Lock()
	if !zombie {
		code = -1
		if ps := p.cmd.ProcessState; ps != nil {
			code = exitCode(ps)
		} else {
			p.waitErr = err
		}
	}
	p.timedOut = errors.Is(p.stopCause, errTimedOut)
	if p.timedOut {
		code = TimeoutExitCode
	}
	p.exitedAt, p.exitCode = time.Now(), code
	p.sink.exit(code, p.timedOut)
	p.mu.Unlock()
	close(p.exited)
	if zombie {
		<-p.killed
		_ = p.cmd.Wait()
	}
	close(p.reaped)
}

// interrupt stops the running leader's group for cause: TERM for a
// graceful stop, KILL for any other. It is cmd.Cancel, and the first cause
// is remembered. Once the leader exited it does nothing: os.ErrProcessDone.
func (p *process) interrupt(cause error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exitedAt.IsZero() {
		return os.ErrProcessDone
	}
	if p.stopCause == nil {
		p.stopCause = cause
	}
	var err error
	if errors.Is(cause, errTerminated) {
		err = p.group.signal(termSignal)
	} else {
		err = p.group.kill()
	}
	if err != nil {
		p.log.Warn("process: stop group", "id", p.id, "pid", p.pid, "cause", cause, "err", err)
	}
	return err
}

// kill kills the process group; failures are logged, there is nothing else
// to do about them.
func (p *process) kill() {
	if err := p.group.kill(); err != nil {
		p.log.Warn("process: kill group", "id", p.id, "pid", p.pid, "err", err)
	}
}

func (p *process) markClosed() {
	p.mu.Lock()
	p.sink.close()
	p.closedAt = time.Now()
	p.mu.Unlock()
	close(p.closed)
}

// releaseBox empties and removes the process's limits box, if any.
func (p *process) releaseBox() {
	if p.box != nil {
		p.box.release()
	}
}
