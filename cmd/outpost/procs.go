package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"
)

// runPs lists the processes of an agent or session, like tmux ls.
func runPs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ps", "[--agent A | --session S] [--json]", stderr)
	tc := addTargetCommand(fs)
	asJSON := fs.Bool("json", false, "print the processes as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	t, err := tc.target(ctx)
	if err != nil {
		return err
	}
	ps, err := t.ListProcesses(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"processes": ps})
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tPID\tSTATUS\tTTY\tSTARTED\tCOMMAND")
	for _, p := range ps {
		status := "running"
		switch {
		case p.Running && p.Detached:
			status = "running (detached)"
		case p.ExitCode != nil:
			status = "exited " + strconv.Itoa(*p.ExitCode)
		}
		tty := "-"
		if p.TTY {
			tty = "yes"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", p.ID, p.PID, status, tty,
			p.StartedAt.Local().Format(time.DateTime), strings.Join(p.Argv, " "))
	}
	return w.Flush()
}

// runAttach attaches to a process: its terminal (when it has one and
// stdin is a terminal) or its streams, from --after.
func runAttach(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return ownFailure("attach", stderr, attachCommand(ctx, args, stdout, stderr))
}

func attachCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("attach", "[--agent A | --session S] [--after SEQ] [--no-stdin] ID", stderr)
	tc := addTargetCommand(fs)
	after := fs.Uint64("after", 0, "resume after this seq (0: all the output still retained)")
	noStdin := fs.Bool("no-stdin", false, "only show the output; do not forward stdin")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("attach takes one process id")
	}
	id := fs.Arg(0)
	t, err := tc.target(ctx)
	if err != nil {
		return err
	}
	p, err := t.GetProcess(ctx, id)
	if err != nil {
		return err
	}
	fd := int(os.Stdin.Fd())
	a := &attachment{
		t: t, id: id, name: "attach", tty: p.TTY && !*noStdin && term.IsTerminal(fd), fd: fd,
		stdout: stdout, stderr: stderr,
	}
	if !*noStdin && p.Running {
		a.stdin = os.Stdin
	}
	return a.run(context.WithoutCancel(ctx), *after)
}

// runKill ends a process: its group gets TERM, then KILL after a grace;
// with -s, one signal instead.
func runKill(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("kill", "[--agent A | --session S] [-s SIGNAL] ID", stderr)
	tc := addTargetCommand(fs)
	sig := fs.String("s", "", "send this signal (INT TERM KILL HUP QUIT USR1 USR2) instead of terminating")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("kill takes one process id")
	}
	t, err := tc.target(ctx)
	if err != nil {
		return err
	}
	if *sig != "" {
		return t.Signal(ctx, fs.Arg(0), strings.TrimPrefix(strings.ToUpper(*sig), "SIG"))
	}
	was, err := t.Terminate(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	if !was {
		fmt.Fprintf(stderr, "outpost kill: process %s had already exited\n", fs.Arg(0))
	}
	return nil
}
