package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/outposthq/outpost/controlplane/client"
)

// runGit is `outpost git status|diff`.
func runGit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	subs := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"status": runGitStatus, "diff": runGitDiff,
	}
	if len(args) == 0 || subs[args[0]] == nil {
		fmt.Fprintln(stderr, "usage: outpost git status|diff [flags] [PATH]\n\nRun 'outpost git <command> --help' for its flags.")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return fmt.Errorf("want status or diff")
	}
	return subs[args[0]](ctx, args[1:], stdout, stderr)
}

func runGitStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("git status", "[--json] [REPO]", stderr)
	tf := addTargetCommand(fs)
	asJSON := fs.Bool("json", false, "print the API's JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	st, err := t.GitStatus(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, st)
	}
	if !st.IsRepo {
		return fmt.Errorf("not a git repository: %s", or(fs.Arg(0), "the agent's root"))
	}
	fmt.Fprintln(stdout, branchLine(st.Branch))
	for _, e := range st.Entries {
		fmt.Fprintln(stdout, statusLine(e))
	}
	return nil
}

// branchLine is `git status -sb`'s first line.
func branchLine(b client.GitBranch) string {
	s := "## " + b.Head
	switch {
	case b.Detached:
		s = "## HEAD (detached at " + short(b.OID) + ")"
	case b.Unborn:
		s = "## No commits yet on " + b.Head
	}
	if b.Upstream != "" {
		s += "..." + b.Upstream
		var ab []string
		if b.Ahead > 0 {
			ab = append(ab, fmt.Sprintf("ahead %d", b.Ahead))
		}
		if b.Behind > 0 {
			ab = append(ab, fmt.Sprintf("behind %d", b.Behind))
		}
		if len(ab) > 0 {
			s += " [" + strings.Join(ab, ", ") + "]"
		}
	}
	return s
}

// statusLine is one line as `git status --short` prints it.
func statusLine(e client.GitStatusEntry) string {
	xy := strings.ReplaceAll(e.Index+e.Worktree, ".", " ")
	switch e.Kind {
	case "untracked":
		xy = "??"
	case "ignored":
		xy = "!!"
	}
	if e.OrigPath != "" {
		return xy + " " + e.OrigPath + " -> " + e.Path
	}
	return xy + " " + e.Path
}

func short(oid string) string { return oid[:min(len(oid), 7)] }

func runGitDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("git diff", "[--staged] [--ref REF] [--stat] [--json] [REPO]", stderr)
	tf := addTargetCommand(fs)
	staged := fs.Bool("staged", false, "the index against HEAD")
	ref := fs.String("ref", "", "compare against this revision")
	stat := fs.Bool("stat", false, "print added and deleted lines per file instead of the patch")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	d, err := t.GitDiff(ctx, client.GitDiffOptions{Path: fs.Arg(0), Staged: *staged, Ref: *ref})
	switch {
	case err != nil:
		return err
	case *asJSON:
		return printJSON(stdout, d)
	case *stat:
		for _, f := range d.Files {
			name := f.Path
			if f.OldPath != "" {
				name = f.OldPath + " => " + f.Path
			}
			if f.Binary {
				fmt.Fprintf(stdout, "-\t-\t%s\n", name)
			} else {
				fmt.Fprintf(stdout, "%d\t%d\t%s\n", f.Added, f.Deleted, name)
			}
		}
		return nil
	}
	_, err = io.WriteString(stdout, d.Patch)
	return err
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
