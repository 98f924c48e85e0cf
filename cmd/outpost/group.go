package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/outposthq/outpost/controlplane/client"
)

// subcommand is one command of a group, e.g. `outpost token create`.
type subcommand struct {
	name, synopsis, summary string
	// setup registers the subcommand's own flags and returns what runs it
	// with the client, the workspace and the positional arguments.
	setup func(fs *flag.FlagSet) subcommandRun
}

// subcommandRun runs a parsed subcommand.
type subcommandRun func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error

// runGroup runs the subcommand of group named by args[0]: its flags (the
// client's and its own, which may follow positional arguments) parsed, the
// client made. With def set, args without a subcommand run def.
func runGroup(ctx context.Context, group string, cmds []subcommand, def string, args []string, stdout, stderr io.Writer) error {
	if def != "" && (len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelp(args[0])) {
		args = append([]string{def}, args...)
	}
	if len(args) == 0 || isHelp(args[0]) {
		groupUsage(stderr, group, cmds)
		if len(args) == 0 {
			return fmt.Errorf("no %s command given", group)
		}
		return flag.ErrHelp
	}
	i := slices.IndexFunc(cmds, func(c subcommand) bool { return c.name == args[0] })
	if i < 0 {
		groupUsage(stderr, group, cmds)
		return fmt.Errorf("unknown %s command %q", group, args[0])
	}
	c := cmds[i]
	fs := newFlags(group+" "+c.name, c.synopsis, stderr)
	var cf clientFlags
	cf.register(fs)
	run := c.setup(fs)
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	return run(ctx, cl, cf.workspace, pos, stdout)
}

func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "help" }

func groupUsage(w io.Writer, group string, cmds []subcommand) {
	fmt.Fprintf(w, "usage: outpost %s <command> [flags]\n\ncommands:\n", group)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'outpost %s <command> --help' for a command's flags.\n", group)
}

// jsonFlag registers --json.
func jsonFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("json", false, "print JSON")
}

// wantSome checks that args name at least one thing.
func wantSome(args []string, what string) error {
	if len(args) == 0 {
		return fmt.Errorf("name at least one %s", what)
	}
	return nil
}

// leafCommand is one command of a group whose commands parse their own
// flags, as `outpost fs ls` and `outpost git log` do.
type leafCommand struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// runLeafGroup runs the command of group named by args[0].
func runLeafGroup(ctx context.Context, group string, cmds []leafCommand, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || isHelp(args[0]) {
		leafUsage(stderr, group, cmds)
		if len(args) == 0 {
			return fmt.Errorf("no %s command given", group)
		}
		return flag.ErrHelp
	}
	i := slices.IndexFunc(cmds, func(c leafCommand) bool { return c.name == args[0] })
	if i < 0 {
		leafUsage(stderr, group, cmds)
		return fmt.Errorf("unknown %s command %q", group, args[0])
	}
	return cmds[i].run(ctx, args[1:], stdout, stderr)
}

func leafUsage(w io.Writer, group string, cmds []leafCommand) {
	fmt.Fprintf(w, "usage: outpost %s <command> [flags]\n\ncommands:\n", group)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'outpost %s <command> --help' for a command's flags.\n", group)
}

// exactly checks that fs was given n positional arguments, naming what
// they are when not: extra arguments are errors, never ignored.
func exactly(fs *flag.FlagSet, n int, what string) error {
	if fs.NArg() != n {
		fs.Usage()
		return fmt.Errorf("want %s, got %d argument(s)", what, fs.NArg())
	}
	return nil
}

// atMost checks that fs was given at most n positional arguments.
func atMost(fs *flag.FlagSet, n int, what string) error {
	if fs.NArg() > n {
		fs.Usage()
		return fmt.Errorf("want at most %s, got %d arguments: %q", what, fs.NArg(), fs.Args())
	}
	return nil
}
