package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/outposthq/outpost/controlplane/client"
	"golang.org/x/term"
)

// noPTYWarning is what exec -t says when stdin is no terminal (as ssh).
const noPTYWarning = "Pseudo-terminal will not be allocated because stdin is not a terminal."

// loginShell starts the agent user's login shell (exec -t without a
// command).
const loginShell = `exec "${SHELL:-/bin/sh}" -l`

// ttyCount is -t, counted: -t asks for a PTY when stdin is a terminal,
// -t -t (or -tt) forces one, as ssh's.
type ttyCount int

func (c *ttyCount) String() string   { return fmt.Sprint(int(*c)) }
func (c *ttyCount) IsBoolFlag() bool { return true }
func (c *ttyCount) Set(v string) error {
	switch v {
	case "true":
		*c++
	case "false":
		*c = 0
	default:
		return fmt.Errorf("-t takes no value")
	}
	return nil
}

// envList is -e K=V, repeated.
type envList map[string]string

func (e envList) String() string { return "" }
func (e envList) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("-e wants NAME=VALUE, not %q", v)
	}
	e[k] = val
	return nil
}

// ownFailure makes Outpost's own failure in exec or attach (unknown or
// offline agent, bad token, lost connection) exit 255, as ssh does, with
// the message on stderr; the remote command's status and --help pass.
func ownFailure(name string, stderr io.Writer, err error) error {
	var ee exitError
	if err == nil || errors.As(err, &ee) || errors.Is(err, flag.ErrHelp) {
		return err
	}
	fmt.Fprintf(stderr, "outpost %s: %v\n", name, err)
	return exitError(255)
}

func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return ownFailure("exec", stderr, execCommand(ctx, args, stdout, stderr))
}

func execCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("exec", "[--agent A | --session S] [-t|-tt] [-e K=V]... [--detach] -- CMD ARGS...", stderr)
	var cf clientFlags
	cf.register(fs)
	tf := addTargetFlags(fs)
	var tty ttyCount
	fs.Var(&tty, "t", "attach a PTY to your terminal (raw mode, resize, escapes ~. ~?); -t -t forces one without a terminal")
	forceTTY := fs.Bool("tt", false, "force a PTY even when stdin is not a terminal (as -t -t)")
	env := envList{}
	fs.Var(env, "e", "set an environment variable NAME=VALUE for the command (repeatable)")
	detach := fs.Bool("detach", false, "start the process, print its id and return; it is never hung up (outpost attach ID)")
	buffered := fs.Bool("buffered", false, "run to completion, then print the output (POST /exec)")
	cwd := fs.String("cwd", "", "working directory, relative to the agent's root")
	timeout := fs.Int64("timeout", 0, "timeout in milliseconds (default none; 60000 with --buffered)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *forceTTY {
		tty = 2
	}
	argv := fs.Args()
	stdinTerminal := term.IsTerminal(int(os.Stdin.Fd()))
	wantTTY := tty >= 2 || tty == 1 && stdinTerminal
	if tty == 1 && !stdinTerminal {
		fmt.Fprintln(stderr, noPTYWarning)
	}
	if len(argv) == 0 && !wantTTY {
		fs.Usage()
		return fmt.Errorf("no command given (outpost exec -- CMD ARGS...; exec -t alone starts a login shell)")
	}
	if tty > 0 && *buffered {
		return fmt.Errorf("-t and --buffered exclude each other")
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	target, err := tf.target(ctx, cl, cf.workspace)
	if err != nil {
		return err
	}
	if *buffered {
		return bufferedExec(ctx, target, client.ExecRequest{Argv: argv, Cwd: *cwd, TimeoutMs: *timeout, Env: env}, stdout, stderr)
	}
	req := client.StartProcessRequest{
		Argv: argv, Cwd: *cwd, TimeoutMs: *timeout, TTY: wantTTY, Stdin: true,
		Env: forwardedEnv(env, wantTTY), Hangup: !*detach, Detached: *detach,
	}
	if len(argv) == 0 {
		req.Argv, req.Command = nil, loginShell
	}
	fd := int(os.Stdin.Fd())
	raw := wantTTY && stdinTerminal
	if raw {
		if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
			req.Cols, req.Rows = w, h
		}
	}
	// Signals are for the remote process from here on, not the command's
	// context.
	ctx = context.WithoutCancel(ctx)
	st, err := target.StartProcess(ctx, req)
	if err != nil {
		return err
	}
	if *detach {
		_, err := fmt.Fprintln(stdout, st.ID)
		return err
	}
	a := &attachment{
		t: target, id: st.ID, name: "exec", tty: raw, stdin: os.Stdin, eof: !wantTTY, fd: fd,
		stdout: stdout, stderr: stderr,
	}
	return a.run(ctx, 0)
}

// forwardedEnv is the command's environment: the local TERM (with a PTY),
// LANG and LC_*, as ssh forwards them, then -e's.
func forwardedEnv(env envList, tty bool) map[string]string {
	out := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if k == "LANG" || strings.HasPrefix(k, "LC_") || k == "TERM" && tty {
			out[k] = v
		}
	}
	for k, v := range env {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// bufferedExec runs req with POST /exec and prints its output.
func bufferedExec(ctx context.Context, target *client.Target, req client.ExecRequest, stdout, stderr io.Writer) error {
	if stdinIsPipe() {
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		req.StdinBase64 = base64.StdEncoding.EncodeToString(data)
	}
	res, err := target.ExecBytes(ctx, req)
	if err != nil {
		return err
	}
	io.WriteString(stdout, res.Stdout)
	io.WriteString(stderr, res.Stderr)
	if res.TimedOut {
		fmt.Fprintln(stderr, "outpost exec: timed out")
	}
	if res.ExitCode != 0 {
		return exitError(res.ExitCode)
	}
	return nil
}

// stdinIsPipe reports whether stdin is a pipe or file rather than a terminal.
func stdinIsPipe() bool {
	fi, err := os.Stdin.Stat()
	if err != nil {
		return false
	}
	return fi.Mode()&os.ModeNamedPipe != 0 || fi.Mode().IsRegular()
}
