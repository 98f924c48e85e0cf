package proc

import (
	"context"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Defaults of ExecRequest.
const (
	// DefaultTimeout is the timeout of an ExecRequest that sets none.
	DefaultTimeout = wire.DefaultExecTimeoutMs * time.Millisecond
	// DefaultOutputCap is the per-stream output cap of an ExecRequest that
	// sets none.
	DefaultOutputCap = wire.DefaultOutputCap
	// TimeoutExitCode is the exit code reported for a command that timed out.
	TimeoutExitCode = 124
)

// ExecRequest is one buffered command run.
type ExecRequest struct {
	// Argv is the program and its arguments, run directly; the program is
	// looked up in the PATH of the merged environment. Exactly one of Argv
	// and Command is set.
	Argv []string
	// Command is shell text, run with /bin/sh -c (cmd.exe /C on Windows).
	Command string
	// Cwd is the working directory, relative to the root (or absolute and
	// inside it); empty means the root.
	Cwd string
	// Env is added to the agent's environment (less its ScrubbedPrefix
	// variables), replacing variables of the same name.
	Env map[string]string
	// Stdin is written to the process's stdin, which is then closed. Empty
	// means stdin is the null device.
	Stdin []byte
	// Timeout bounds the run; zero means DefaultTimeout. On expiry the whole
	// process group is killed and the result has TimedOut set.
	Timeout time.Duration
	// OutputCap is how many bytes of each of stdout and stderr are kept;
	// zero means DefaultOutputCap. The rest is read and dropped.
	OutputCap int
}

// ExecResult is the outcome of a command that ran. A non-zero exit is a
// result, not an error.
type ExecResult struct {
	// ExitCode is the exit status; 128+n when killed by signal n (unix);
	// TimeoutExitCode when the run timed out.
	ExitCode int
	// Stdout and Stderr are the exact bytes the process wrote, up to the cap.
	Stdout, Stderr []byte
	// TimedOut reports that the timeout killed the process group.
	TimedOut bool
	// Truncated reports that some stream produced more than the cap.
	Truncated bool
	// Duration is how long the run took, from start to the end of output.
	Duration time.Duration
}

// validate checks the request's shape and fills in defaults.
func (r *ExecRequest) validate() error {
	if err := wire.ValidCommand("exec", r.Argv, r.Command); err != nil {
		return err
	}
	if err := wire.ValidCwdEnv(r.Cwd, r.Env); err != nil {
		return err
	}
	switch {
	case r.Timeout < 0:
		return wire.Errorf(wire.CodeInvalidArgument, "", "timeout must not be negative")
	case r.OutputCap < 0:
		return wire.Errorf(wire.CodeInvalidArgument, "", "output cap must not be negative")
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultTimeout
	}
	if r.OutputCap == 0 {
		r.OutputCap = DefaultOutputCap
	}
	return nil
}

// Exec runs a command to completion and returns its exit code and output:
// a process started, waited on and collected like a streaming one, whose
// output goes to a capture of OutputCap bytes per stream.
//
// The process runs in its own process group. When it exits, output still
// written by children holding its pipes is collected until the pipes close,
// or for at most 2 s and only while output keeps coming (300 ms of quiet ends
// it), and never past the timeout or the end of ctx. Then the rest of the
// group is killed: when Exec returns, every process of the group has been
// sent SIGKILL. On timeout the group is killed and the result has ExitCode
// 124 and TimedOut set.
//
// Errors are *wire.Error: invalid_argument for a malformed request,
// permission_denied/outside_root for a cwd outside the root,
// not_found/executable_not_found, unavailable/busy when MaxProcesses are
// alive, deadline_exceeded or unavailable when ctx ends or the Manager
// closes before the process exits (the group is killed).
func (m *Manager) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	if err := req.validate(); err != nil {
		return ExecResult{}, err
	}
	if ctx.Err() != nil {
		return ExecResult{}, stopError(context.Cause(ctx))
	}
	out := newCapture(req.OutputCap)
	p, err := m.launch(ctx, spec{
		argv: req.Argv, command: req.Command, cwd: req.Cwd, env: req.Env,
		stdin: len(req.Stdin) > 0, input: req.Stdin, timeout: req.Timeout, sink: out,
	})
	if err != nil {
		return ExecResult{}, err
	}
	<-p.closed
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.stopCause != nil && !p.timedOut:
		return ExecResult{}, stopError(p.stopCause)
	case p.waitErr != nil:
		return ExecResult{}, wire.Errorf(wire.CodeInternal, "", "exec: wait: %v", p.waitErr)
	}
	res := ExecResult{ExitCode: p.exitCode, TimedOut: p.timedOut, Duration: p.closedAt.Sub(p.started)}
	res.Stdout, res.Stderr, res.Truncated = out.result()
	return res, nil
}
