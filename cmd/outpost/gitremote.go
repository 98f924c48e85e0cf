package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/outposthq/outpost/controlplane/client"
)

// The git commands of issue 16: stage, branch, clone and the remote ones.
// Commands whose arguments are paths, names or remotes take the repository
// as --repo (default the agent's root).

// repoFlag adds --repo.
func repoFlag(fs *flag.FlagSet) *string {
	return fs.String("repo", "", "the repository directory under the root (default the root)")
}

// printStatus prints a status as `git status -sb` does.
func printStatus(w io.Writer, st *client.GitStatus) {
	fmt.Fprintln(w, branchLine(st.Branch))
	for _, e := range st.Entries {
		fmt.Fprintln(w, statusLine(e))
	}
}

// runGitStage is `outpost git add` and `outpost git reset`.
func runGitStage(verb string, call func(*client.Target, context.Context, client.GitStageRequest) (*client.GitStatus, error)) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		fs := newFlags("git "+verb, "[-A] [--repo REPO] [--json] PATH...", stderr)
		tf := addTargetCommand(fs)
		all := fs.Bool("A", false, "every change, new files included (add) / everything (reset)")
		repo := repoFlag(fs)
		asJSON := jsonFlag(fs)
		if err := fs.Parse(args); err != nil {
			return err
		}
		switch {
		case *all && fs.NArg() > 0:
			fs.Usage()
			return fmt.Errorf("-A takes no PATH arguments, got %d arguments: %q", fs.NArg(), fs.Args())
		case !*all && fs.NArg() == 0:
			fs.Usage()
			return fmt.Errorf("name at least one PATH, or -A")
		}
		t, err := tf.target(ctx)
		if err != nil {
			return err
		}
		st, err := call(t, ctx, client.GitStageRequest{Path: *repo, Paths: fs.Args(), All: *all})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, st)
		}
		printStatus(stdout, st)
		return nil
	}
}

func runGitBranch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("git branch", "[--repo REPO] [--json] [[--from REF] NAME | -d NAME | -D NAME]", stderr)
	tf := addTargetCommand(fs)
	repo := repoFlag(fs)
	from := fs.String("from", "", "the new branch's start (default HEAD)")
	del := fs.Bool("d", false, "delete NAME (refused when not merged)")
	force := fs.Bool("D", false, "delete NAME even when not merged")
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := atMost(fs, 1, "one NAME"); err != nil {
		return err
	}
	name := fs.Arg(0)
	switch {
	case (*del || *force) && name == "":
		fs.Usage()
		return fmt.Errorf("-d and -D need a NAME")
	case (*del || *force) && *from != "":
		return fmt.Errorf("--from is for a new branch, not -d or -D")
	case name == "" && *from != "":
		return fmt.Errorf("--from needs a NAME")
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	switch {
	case *del || *force:
		return t.GitDeleteBranch(ctx, *repo, name, *force)
	case name != "":
		b, err := t.GitCreateBranch(ctx, client.GitBranchCreateRequest{Path: *repo, Name: name, From: *from})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, b)
		}
		_, err = fmt.Fprintf(stdout, "%s %s\n", b.Name, short(b.OID))
		return err
	}
	bs, err := t.GitBranches(ctx, *repo)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, bs)
	}
	for _, b := range bs.Branches {
		mark, name := " ", b.Name
		if !b.Remote && b.Name == bs.Current {
			mark = "*"
		}
		if b.Remote {
			name = "remotes/" + name
		}
		line := fmt.Sprintf("%s %s %s", mark, name, short(b.OID))
		if b.Upstream != "" {
			line += " [" + b.Upstream + "]"
		}
		fmt.Fprintln(stdout, line)
	}
	return nil
}

func runGitCheckout(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("git checkout", "[-b] [--repo REPO] [--json] REF", stderr)
	tf := addTargetCommand(fs)
	create := fs.Bool("b", false, "make REF a new branch at HEAD and switch to it")
	repo := repoFlag(fs)
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("want one REF, got %d arguments: %q", fs.NArg(), fs.Args())
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	st, err := t.GitCheckout(ctx, client.GitCheckoutRequest{Path: *repo, Ref: fs.Arg(0), Create: *create})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, st)
	}
	printStatus(stdout, st)
	return nil
}

func runGitClone(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("git clone", "[--ref REF] [--depth N] [--json] URL PATH", stderr)
	tf := addTargetCommand(fs)
	var req client.GitCloneRequest
	fs.StringVar(&req.Ref, "ref", "", "check out this branch or tag")
	fs.IntVar(&req.Depth, "depth", 0, "a shallow clone of this many commits")
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return fmt.Errorf("want URL and PATH, got %d arguments: %q", fs.NArg(), fs.Args())
	}
	if req.Depth < 0 {
		return fmt.Errorf("--depth %d: want a count of commits", req.Depth)
	}
	req.URL, req.Path = fs.Arg(0), fs.Arg(1)
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	res, err := t.GitClone(ctx, req)
	if err != nil {
		return err
	}
	return printSummary(stdout, res, *asJSON)
}

// runGitRemote is `outpost git fetch|pull|push`.
func runGitRemote(verb string, call func(*client.Target, context.Context, client.GitRemoteRequest) (*client.GitRemoteResult, error)) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		synopsis := "[--repo REPO] [--json] [REMOTE [REF]]"
		if verb == "push" {
			synopsis = "[-u] " + synopsis
		}
		fs := newFlags("git "+verb, synopsis, stderr)
		tf := addTargetCommand(fs)
		repo := repoFlag(fs)
		var up *bool
		if verb == "push" {
			up = fs.Bool("u", false, "record the upstream (with no REF, push HEAD)")
		}
		asJSON := jsonFlag(fs)
		if err := fs.Parse(args); err != nil {
			return err
		}
		if err := atMost(fs, 2, "REMOTE and REF"); err != nil {
			return err
		}
		req := client.GitRemoteRequest{Path: *repo, Remote: fs.Arg(0), Ref: fs.Arg(1)}
		if up != nil {
			req.SetUpstream = *up
		}
		t, err := tf.target(ctx)
		if err != nil {
			return err
		}
		res, err := call(t, ctx, req)
		if err != nil {
			return err
		}
		return printSummary(stdout, res, *asJSON)
	}
}

// printSummary prints what git printed, or the JSON result.
func printSummary(w io.Writer, res *client.GitRemoteResult, asJSON bool) error {
	if asJSON {
		return printJSON(w, res)
	}
	if s := strings.TrimSpace(res.Summary); s != "" {
		_, err := fmt.Fprintln(w, s)
		return err
	}
	return nil
}
