package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"

	"github.com/outposthq/outpost/controlplane/client"
)

func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("exec", "[--agent A | --session S] [-t] -- CMD ARGS...", stderr)
	var cf clientFlags
	cf.register(fs)
	tf := addTargetFlags(fs)
	tty := fs.Bool("t", false, "attach a PTY to your terminal (raw mode, resize, Ctrl-C to the remote)")
	buffered := fs.Bool("buffered", false, "run to completion, then print the output (POST /exec)")
	cwd := fs.String("cwd", "", "working directory, relative to the agent's root")
	timeout := fs.Int64("timeout", 0, "timeout in milliseconds (default none; 60000 with --buffered)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fs.Usage()
		return fmt.Errorf("no command given (outpost exec -- CMD ARGS...)")
	}
	if *tty && *buffered {
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
	if !*buffered {
		req := client.StartProcessRequest{Argv: argv, Cwd: *cwd, TimeoutMs: *timeout, TTY: *tty, Stdin: true}
		return streamExec(ctx, target, req, os.Stdin, stdout, stderr)
	}
	req := client.ExecRequest{Argv: argv, Cwd: *cwd, TimeoutMs: *timeout}
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
