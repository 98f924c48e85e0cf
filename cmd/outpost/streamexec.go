package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
	"golang.org/x/term"
)

// Streaming exec limits.
const (
	// resumeFor is how long exec keeps resuming a broken events stream
	// (control plane restart, agent reconnecting) before it gives up.
	resumeFor = 5 * time.Minute
	// stdinChunk is the most stdin one write carries (a read from a
	// terminal returns far less; a pipe fills it).
	stdinChunk = 256 << 10
	// callTimeout bounds each control call (stdin, signal, resize).
	callTimeout = 30 * time.Second
)

// streamExec runs req as a streaming process: its output goes live to
// stdout and stderr (a PTY's to stdout), local stdin is forwarded, and the
// exit status is passed through. With a TTY and a local terminal, the
// terminal is raw (Ctrl-C reaches the remote as a byte) and resized with
// the window; otherwise Ctrl-C sends INT to the remote, a second one TERM.
func streamExec(ctx context.Context, t *client.Target, req client.StartProcessRequest, stdin *os.File, stdout, stderr io.Writer) error {
	// Ctrl-C is for the remote process: the command's own context is not
	// canceled by it.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	fd := int(stdin.Fd())
	raw := req.TTY && term.IsTerminal(fd)
	if raw {
		if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
			req.Cols, req.Rows = w, h
		}
	}
	st, err := t.StartProcess(ctx, req)
	if err != nil {
		return err
	}
	restore := func() {}
	if raw {
		old, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("raw terminal: %w", err)
		}
		restore = func() { _ = term.Restore(fd, old) }
		defer restore()
		go watchResize(ctx, t, st.ID, fd)
	} else {
		go forwardSignals(ctx, t, st.ID)
	}
	go forwardStdin(ctx, t, st.ID, stdin, !req.TTY)
	exit, err := followOutput(ctx, t, st.ID, stdout, stderr)
	restore()
	if err != nil {
		return err
	}
	if exit.TimedOut {
		fmt.Fprintln(stderr, "outpost exec: timed out")
	}
	if exit.ExitCode != 0 {
		return exitError(exit.ExitCode)
	}
	return nil
}

// followOutput copies the process's events to stdout and stderr until
// closed, resuming the stream from the last event seen when it breaks.
func followOutput(ctx context.Context, t *client.Target, id string, stdout, stderr io.Writer) (client.ProcessExit, error) {
	var exit client.ProcessExit
	var after uint64
	giveUp := time.Now().Add(resumeFor)
	backoff := 100 * time.Millisecond
	for {
		err := t.Events(ctx, id, after, func(ev client.ProcessEvent) error {
			switch ev.Kind {
			case client.EventOutput:
				w := stdout
				if ev.Chunk.Stream == wire.StreamStderr {
					w = stderr
				}
				if _, err := w.Write(ev.Chunk.Data); err != nil {
					return fmt.Errorf("write output: %w", err)
				}
			case client.EventExit, client.EventClosed:
				exit = *ev.Exit
			}
			after = ev.Seq
			giveUp = time.Now().Add(resumeFor)
			return nil
		})
		if err == nil {
			return exit, nil
		}
		var we *wire.Error
		if errors.As(err, &we) && !we.Retryable || time.Now().After(giveUp) || ctx.Err() != nil {
			return exit, err
		}
		select {
		case <-ctx.Done():
			return exit, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// forwardStdin sends local stdin to the process in order; each write has a
// write id, so a retry after a lost reply never writes twice. At EOF it
// closes the remote stdin when eof is set (a PTY gets Ctrl-D as typed).
// It ends at EOF, when the process stops taking stdin, or with ctx; a read
// blocked on a terminal ends with the command.
func forwardStdin(ctx context.Context, t *client.Target, id string, stdin io.Reader, eof bool) {
	prefix := rand.Text()[:10] + "-"
	buf := make([]byte, stdinChunk)
	for n := 0; ; n++ {
		k, rerr := stdin.Read(buf)
		req := client.StdinRequest{WriteID: prefix + strconv.Itoa(n), Data: append([]byte(nil), buf[:k]...)}
		if rerr != nil {
			if !eof {
				return
			}
			req.EOF = true
		}
		if k == 0 && !req.EOF {
			continue
		}
		if !writeStdin(ctx, t, id, req) || rerr != nil {
			return
		}
	}
}

// writeStdin sends one write, retrying while the agent is unreachable; it
// reports false when the process no longer takes stdin.
func writeStdin(ctx context.Context, t *client.Target, id string, req client.StdinRequest) bool {
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := t.WriteStdin(cctx, id, req)
		cancel()
		var we *wire.Error
		switch {
		case err == nil:
			return true
		case ctx.Err() != nil, errors.As(err, &we) && !we.Retryable && we.Code != wire.CodeDeadlineExceeded:
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// forwardSignals sends local Ctrl-C and SIGTERM to the remote process:
// the first Ctrl-C as INT, later ones as TERM; SIGTERM as TERM.
func forwardSignals(ctx context.Context, t *client.Target, id string) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(ch)
	interrupts := 0
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-ch:
			name := "TERM"
			if sig == os.Interrupt {
				if interrupts++; interrupts == 1 {
					name = "INT"
				}
			}
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			_ = t.Signal(cctx, id, name)
			cancel()
		}
	}
}
