package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// sessionCommand is one subcommand of `outpost session`.
type sessionCommand struct {
	name, synopsis, summary string
	run                     func(ctx context.Context, cl *client.Client, ws string, pos []string, f *sessionFlags, stdout io.Writer) error
}

var sessionCommands = []sessionCommand{
	{"create", "[ID] --agent NAME=AGENT... --pool NAME=POOL... [--active NAME] [--snapshot-every DURATION]", "create a session (the first backend given is active unless --active)", sessionCreate},
	{"show", "ID", "show a session, its backends and transitions", sessionShow},
	{"swap", "ID BACKEND [--if-epoch N] [--carry]", "point a session at another of its backends (--carry: and move the files)", sessionSwap},
	{"delete", "ID", "delete a session and release its pool claims", sessionDelete},
	{"ls", "", "list the workspace's sessions", sessionList},
}

// sessionFlags are the flags of every session subcommand.
type sessionFlags struct {
	backends backendList
	active   string
	ifEpoch  uint64
	carry    bool
	every    time.Duration
	json     bool
}

func runSession(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, "usage: outpost session <command> [flags]\n\ncommands:")
		for _, c := range sessionCommands {
			fmt.Fprintf(stderr, "  %-7s %s\n", c.name, c.summary)
		}
		if len(args) == 0 {
			return fmt.Errorf("no session command given")
		}
		return flag.ErrHelp
	}
	i := slices.IndexFunc(sessionCommands, func(c sessionCommand) bool { return c.name == args[0] })
	if i < 0 {
		return fmt.Errorf("unknown session command %q (create, show, swap, delete, ls)", args[0])
	}
	c := sessionCommands[i]
	fs := newFlags("session "+c.name, c.synopsis, stderr)
	var cf clientFlags
	cf.register(fs)
	var f sessionFlags
	fs.BoolVar(&f.json, "json", false, "print the session as JSON")
	if c.name == "create" {
		fs.Var(backendAdder{&f.backends, client.KindAgent}, "agent", "a backend of one enrolled agent, NAME=AGENT (repeatable)")
		fs.Var(backendAdder{&f.backends, client.KindPool}, "pool", "a backend of any agent of a pool, NAME=POOL (repeatable)")
		fs.StringVar(&f.active, "active", "", "the backend the session starts on (default the first given)")
		fs.DurationVar(&f.every, "snapshot-every", 0, "snapshot the active backend's root this often (at least 1s), for a carry away from a backend gone offline")
	}
	if c.name == "swap" {
		fs.Uint64Var(&f.ifEpoch, "if-epoch", 0, "swap only if the session is still at this epoch")
		fs.BoolVar(&f.carry, "carry", false, "move the workspace too: snapshot the old backend (or use the latest snapshot when it is offline) and restore it onto the new one first")
	}
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	return c.run(ctx, cl, cf.workspace, pos, &f, stdout)
}

// parseInterspersed parses flags that may come after positional
// arguments, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// namedBackend is one --agent or --pool flag.
type namedBackend struct {
	name string
	spec client.SessionBackend
}

type backendList []namedBackend

// backendAdder is the flag.Value of --agent and --pool.
type backendAdder struct {
	list *backendList
	kind string
}

func (b backendAdder) String() string { return "" }

func (b backendAdder) Set(v string) error {
	name, target, ok := strings.Cut(v, "=")
	if !ok || name == "" || target == "" {
		return fmt.Errorf("want NAME=%s, e.g. laptop=my-agent", strings.ToUpper(b.kind))
	}
	spec := client.SessionBackend{Kind: b.kind, Agent: target}
	if b.kind == client.KindPool {
		spec = client.SessionBackend{Kind: b.kind, Pool: target}
	}
	*b.list = append(*b.list, namedBackend{name: name, spec: spec})
	return nil
}

func wantArgs(pos []string, n int, what string) error {
	if len(pos) != n {
		return fmt.Errorf("want %s, got %d argument(s)", what, len(pos))
	}
	return nil
}

func sessionCreate(ctx context.Context, cl *client.Client, ws string, pos []string, f *sessionFlags, stdout io.Writer) error {
	if len(pos) > 1 {
		return fmt.Errorf("want at most one session id, got %q", pos)
	}
	if len(f.backends) == 0 {
		return fmt.Errorf("a session needs backends: --agent NAME=AGENT or --pool NAME=POOL")
	}
	req := client.CreateSessionRequest{Backends: map[string]client.SessionBackend{}, Active: f.active, SnapshotEveryMs: f.every.Milliseconds()}
	if len(pos) == 1 {
		req.ID = pos[0]
	}
	for _, b := range f.backends {
		if _, dup := req.Backends[b.name]; dup {
			return fmt.Errorf("backend %q given twice", b.name)
		}
		req.Backends[b.name] = b.spec
	}
	if req.Active == "" {
		req.Active = f.backends[0].name
	}
	sess, err := cl.CreateSession(ctx, ws, req)
	if err != nil {
		return err
	}
	return printSession(stdout, sess, f.json)
}

func sessionShow(ctx context.Context, cl *client.Client, ws string, pos []string, f *sessionFlags, stdout io.Writer) error {
	if err := wantArgs(pos, 1, "a session id"); err != nil {
		return err
	}
	sess, err := cl.GetSession(ctx, ws, pos[0])
	if err != nil {
		return err
	}
	return printSession(stdout, sess, f.json)
}

func sessionSwap(ctx context.Context, cl *client.Client, ws string, pos []string, f *sessionFlags, stdout io.Writer) error {
	if err := wantArgs(pos, 2, "a session id and the backend to swap to"); err != nil {
		return err
	}
	before, err := cl.GetSession(ctx, ws, pos[0])
	if err != nil {
		return err
	}
	req := client.SwapRequest{To: pos[1], Carry: f.carry}
	if f.ifEpoch != 0 {
		req.IfEpoch = &f.ifEpoch
	}
	sess, err := cl.Swap(ctx, ws, pos[0], req)
	if err != nil {
		return err
	}
	if f.json {
		return printSession(stdout, sess, true)
	}
	if sess.Epoch == before.Epoch {
		_, err = fmt.Fprintf(stdout, "session %s is already on %s (epoch %d)\n", sess.ID, sess.Active, sess.Epoch)
		return err
	}
	_, err = fmt.Fprintf(stdout, "session %s: %s → %s (%s), epoch %d\n", sess.ID, before.Active, sess.Active, backendAgent(sess.Backends[sess.Active]), sess.Epoch)
	if lc := sess.LastCarry; f.carry && lc != nil && err == nil {
		_, err = fmt.Fprintf(stdout, "carried snapshot %s of %s taken %s: %d files, %s sent\n",
			lc.Snapshot, lc.From, lc.TakenAt.Local().Format(time.DateTime), lc.Files, byteCount(lc.TransferredBytes))
	}
	return err
}

func sessionDelete(ctx context.Context, cl *client.Client, ws string, pos []string, _ *sessionFlags, stdout io.Writer) error {
	if err := wantArgs(pos, 1, "a session id"); err != nil {
		return err
	}
	if err := cl.DeleteSession(ctx, ws, pos[0]); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stdout, "session %s deleted\n", pos[0])
	return err
}

func sessionList(ctx context.Context, cl *client.Client, ws string, pos []string, f *sessionFlags, stdout io.Writer) error {
	if err := wantArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	list, err := cl.ListSessions(ctx, ws)
	if err != nil {
		return err
	}
	if f.json {
		return json.NewEncoder(stdout).Encode(client.SessionList{Sessions: list})
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tACTIVE\tAGENT\tEPOCH\tSTATUS")
	for _, s := range list {
		b := s.Backends[s.Active]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.ID, s.Active, backendAgent(b), s.Epoch, or(b.Status, "-"))
	}
	return tw.Flush()
}

// printSession prints a session for people, or as JSON.
func printSession(w io.Writer, s *client.Session, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	fmt.Fprintf(w, "session %s: active %s, epoch %d\n", s.ID, s.Active, s.Epoch)
	if s.SnapshotEveryMs > 0 {
		fmt.Fprintf(w, "  snapshots every %s\n", time.Duration(s.SnapshotEveryMs)*time.Millisecond)
	}
	if lc := s.LastCarry; lc != nil {
		fmt.Fprintf(w, "  last carry: snapshot %s of %s taken %s, %d files, %s sent\n", lc.Snapshot, lc.From, lc.TakenAt.Local().Format(time.DateTime), lc.Files, byteCount(lc.TransferredBytes))
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  BACKEND\tKIND\tAGENT\tSTATUS")
	names := make([]string, 0, len(s.Backends))
	for n := range s.Backends {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		mark := " "
		if n == s.Active {
			mark = "*"
		}
		b := s.Backends[n]
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\n", mark, n, b.Kind, backendAgent(b), or(b.Status, "-"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range s.Transitions {
		fmt.Fprintf(w, "  epoch %d  %s → %s (%s)  %s\n", t.Epoch, t.From, t.To, t.Agent, t.At.Local().Format(time.DateTime))
	}
	return nil
}

// backendAgent says which agent a backend runs on.
func backendAgent(b client.SessionBackend) string {
	if b.Kind == client.KindPool {
		if b.Claimed == "" {
			return "pool " + b.Pool + ", none claimed"
		}
		return b.Claimed + " of pool " + b.Pool
	}
	return b.Agent
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
