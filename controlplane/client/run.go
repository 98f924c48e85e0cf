package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Run runs command (shell text) on t and copies its output to stdout and
// stderr as it comes, then returns its exit code (124 when it timed out).
// It is Target.Stream of StartProcessRequest{Command: command}.
func Run(ctx context.Context, t *Target, command string, stdout, stderr io.Writer) (exitCode int, err error) {
	return t.Stream(ctx, StartProcessRequest{Command: command}, stdout, stderr)
}

// runResumes bounds how often Stream resumes a broken events stream in a
// row without an event in between.
const runResumes = 5

// terminateTimeout bounds the terminate Stream sends for a process it stops
// following.
const terminateTimeout = 5 * time.Second

// Stream starts req as a process on t and copies its output to stdout and
// stderr as the agent sends it (a terminal's to stdout), resuming the
// events stream where it broke, until the process's streams close; it
// returns the exit code. An error means the exit code is unknown: when ctx
// ends, or the output cannot be followed or written, the process is
// terminated before Stream returns.
func (t *Target) Stream(ctx context.Context, req StartProcessRequest, stdout, stderr io.Writer) (exitCode int, err error) {
	started, err := t.StartProcess(ctx, req)
	if err != nil {
		return 0, err
	}
	exitCode, err = t.follow(ctx, started.ID, stdout, stderr)
	if err != nil {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), terminateTimeout)
		defer cancel()
		_, _ = t.Terminate(tctx, started.ID)
	}
	return exitCode, err
}

// follow copies process id's output until its closed event.
func (t *Target) follow(ctx context.Context, id string, stdout, stderr io.Writer) (int, error) {
	var (
		last   uint64
		exit   *ProcessExit
		broken int
	)
	for {
		err := t.Events(ctx, id, last, func(ev ProcessEvent) error {
			last, broken = ev.Seq, 0
			switch {
			case ev.Chunk != nil:
				w := stdout
				if ev.Chunk.Stream == wire.StreamStderr {
					w = stderr
				}
				if _, err := w.Write(ev.Chunk.Data); err != nil {
					return fmt.Errorf("write %s: %w", ev.Chunk.Stream, err)
				}
			case ev.Exit != nil: // exit, then closed with the same code
				exit = ev.Exit
			}
			return nil
		})
		switch {
		case err == nil && exit != nil:
			return exit.ExitCode, nil
		case err == nil:
			return 0, fmt.Errorf("process %s: closed without an exit", id)
		case ctx.Err() != nil:
			return 0, context.Cause(ctx)
		case broken >= runResumes || !resumable(err):
			return 0, err
		}
		broken++
	}
}

// resumable reports whether an events stream that ended with err can be
// picked up again where it broke.
func resumable(err error) bool {
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Retryable
	}
	return IsStreamEnded(err) || errors.Is(err, io.ErrUnexpectedEOF)
}
