// Command outpost is the one binary of Outpost: the control plane (serve, up),
// the agent (agent enroll, agent run) and the client commands (exec, agents, ...).
//
// Built with -tags agent it leaves the control plane out: the agent and client
// commands only, without the NATS server or the signing authority, for the
// machines users bring (see TestAgentBuildLinksNoServer).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one subcommand of outpost.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() map[string]command {
	cmds := map[string]command{
		"agent":        {"agent enroll | login | approve | run: the agent on a machine", runAgent},
		"exec":         {"run a command on an agent or session", runExec},
		"ps":           {"list the processes of an agent or session", runPs},
		"attach":       {"attach to a process: its terminal or its output", runAttach},
		"kill":         {"end a process (TERM, then KILL), or send it a signal", runKill},
		"agents":       {"agents [ls] | rm: the workspace's agents, revocation", runAgents},
		"token":        {"token create | ls | rm: enrollment tokens", runToken},
		"key":          {"key create | ls | rm: workspace keys (admin)", runKey},
		"workspace":    {"workspace [show] | set --agent-updates on|off: the workspace's settings", runWorkspace},
		"fs":           {"fs ls | stat | get | put | mkdir | mv | rm: files on an agent or session", runFs},
		"git":          {"git status | diff | log | commit | apply: a repository on an agent or session", runGit},
		"session":      {"session create | show | swap | delete | ls", runSession},
		"port-forward": {"forward a local port to a port of an agent or session, like ssh -L", runPortForward},
		"snapshot":     {"snapshot create | ls | rm | restore: a tree's content kept by the control plane", runSnapshot},
		// Outpost itself: version, contexts, shell completion.
		"version":    {"print the version, commit, Go and protocol versions", runVersion},
		"login":      {"save a control plane's URL and token as a context, and use it", runLogin},
		"logout":     {"forget a saved context and its token", runLogout},
		"context":    {"context [ls] | use: the saved contexts", runContext},
		"completion": {"completion bash | zsh | fish: print a shell completion script", runCompletion},
	}
	maps.Copy(cmds, serverCommands())
	return cmds
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: outpost <command> [flags]\n\ncommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'outpost <command> --help' for a command's flags; 'outpost --version' for the version.")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the process exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 1
		}
		return 0
	}
	switch args[0] {
	case "--version", "-version", "-v":
		args[0] = "version"
	case "__complete": // what the completion scripts run
		complete(args[1:], stdout)
		return 0
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "outpost: unknown command %q\n", args[0])
		usage(stderr)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := cmd.run(ctx, args[1:], stdout, stderr)
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return int(ee)
	case errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintf(stderr, "outpost %s: %v\n", strings.Join(commandPath(args), " "), err)
		return 1
	}
}

// exitError makes run exit with the given status without printing anything:
// exec passes the remote command's exit status through with it.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// newFlags makes a FlagSet whose --help prints the command's usage and flags.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("outpost "+name, flag.ContinueOnError)
	// A parse error is printed once, by run, after the usage: the flag
	// package's own copy goes nowhere.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: outpost %s %s\n\nflags:\n", name, synopsis)
		hideSecretDefaults(fs)
		fs.SetOutput(stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// envOr returns the environment variable or def.
func envOr(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}
