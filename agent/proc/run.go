package proc

import (
	"context"
	"log/slog"
	"os/exec"
	"time"

	"github.com/outposthq/outpost/wire"
)

const (
	// drainQuiet ends collection of output after the process exited once no
	// output came for this long.
	drainQuiet = 300 * time.Millisecond
	// drainMax bounds collection of output after the process exited.
	drainMax = 2 * time.Second
)

// run supervises one started process of Exec: one goroutine waits for the
// leader to exit, the rest waits on exited.
type run struct {
	cmd *exec.Cmd
	io  *stdio
	log *slog.Logger

	exited  chan struct{} // closed when the leader has exited
	reaped  bool          // cmd.Wait has returned; written before exited closes
	waitErr error
}

func newRun(cmd *exec.Cmd, io *stdio, log *slog.Logger) *run {
	r := &run{cmd: cmd, io: io, log: log, exited: make(chan struct{})}
	go r.waitLeader()
	return r
}

// waitLeader closes exited when the leader exits. Where it can, it leaves the
// leader unreaped so that its pid, the group id, stays reserved until the
// group is killed.
func (r *run) waitLeader() {
	if !waitNoReap(r.cmd.Process) {
		r.waitErr = r.cmd.Wait()
		r.reaped = true
	}
	close(r.exited)
}

// supervise runs the process to its end (see Exec) and makes the result.
func (r *run) supervise(ctx context.Context, timeout time.Duration, started time.Time) (ExecResult, error) {
	timedOut, ended := r.waitExit(ctx, timeout)
	if !timedOut && !ended {
		r.drain(ctx)
	}
	r.kill()
	if !r.reaped {
		r.waitErr = r.cmd.Wait()
	}
	if err := r.io.finish(); err != nil {
		r.log.Warn("exec: output pipes left open", "pid", r.cmd.Process.Pid, "err", err)
	}
	res := ExecResult{TimedOut: timedOut, Duration: time.Since(started)}
	res.Stdout, res.Stderr, res.Truncated = r.io.result()
	r.log.Debug("exec finished", "pid", r.cmd.Process.Pid, "state", r.cmd.ProcessState, "timedOut", timedOut, "duration", res.Duration)
	switch {
	case ended:
		return ExecResult{}, contextError(ctx)
	case timedOut:
		res.ExitCode = TimeoutExitCode
	case r.cmd.ProcessState == nil:
		return ExecResult{}, wire.Errorf(wire.CodeInternal, "", "exec: wait: %v", r.waitErr)
	default:
		res.ExitCode = exitCode(r.cmd.ProcessState)
	}
	return res, nil
}

// waitExit waits for the leader to exit. On timeout (timedOut) or when ctx
// ends (ended) it kills the group first.
func (r *run) waitExit(ctx context.Context, timeout time.Duration) (timedOut, ended bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-r.exited:
		return false, false
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		ended = true
	}
	r.kill()
	<-r.exited
	return timedOut, ended
}

// drain collects output written after the leader exited, by children that
// hold its pipes: until both pipes close, drainQuiet passes without output,
// drainMax passes, or ctx ends.
func (r *run) drain(ctx context.Context) {
	start := time.Now()
	hard := time.NewTimer(drainMax)
	defer hard.Stop()
	quiet := time.NewTimer(drainQuiet)
	defer quiet.Stop()
	for {
		select {
		case <-r.io.outputDone:
			return
		case <-hard.C:
			return
		case <-ctx.Done():
			return
		case <-quiet.C:
			last := r.io.lastOutput()
			if last.Before(start) {
				last = start
			}
			idle := time.Since(last)
			if idle >= drainQuiet {
				return
			}
			quiet.Reset(drainQuiet - idle)
		}
	}
}

// kill kills the process group; failures are logged, there is nothing else
// to do about them.
func (r *run) kill() {
	if err := killGroup(r.cmd.Process); err != nil {
		r.log.Warn("exec: kill process group", "pid", r.cmd.Process.Pid, "err", err)
	}
}
