package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// gitCommands are `outpost git ...`: a repository on an agent or session.
var gitCommands = []leafCommand{
	{"status", "the branch and changed paths, as git status -sb", runGitStatus},
	{"diff", "the patch, or lines per file with --stat", runGitDiff},
	{"log", "commits, newest first", runGitLog},
	{"commit", "commit the index (-a: every tracked change)", runGitCommit},
	{"apply", "apply a patch from a file or stdin", runGitApply},
	{"add", "stage paths, new files too (-A: every change)", runGitStage("add", (*client.Target).GitAdd)},
	{"reset", "unstage paths (-A: everything)", runGitStage("reset", (*client.Target).GitReset)},
	{"branch", "list branches, or make (--from) or delete (-d, -D) one", runGitBranch},
	{"checkout", "switch to a branch, tag or commit (-b: a new branch)", runGitCheckout},
	{"clone", "clone a repository into a path under the root", runGitClone},
	{"fetch", "fetch from a remote", runGitRemote("fetch", (*client.Target).GitFetch)},
	{"pull", "fetch and merge", runGitRemote("pull", (*client.Target).GitPull)},
	{"push", "push to a remote (-u: record the upstream)", runGitRemote("push", (*client.Target).GitPush)},
}

// runGit is `outpost git COMMAND` (gitCommands).
func runGit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runLeafGroup(ctx, "git", gitCommands, args, stdout, stderr)
}

func runGitStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("git status", "[--json] [REPO]", stderr)
	tf := addTargetCommand(fs)
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := atMost(fs, 1, "one REPO"); err != nil {
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
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := atMost(fs, 1, "one REPO"); err != nil {
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

func runGitLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("git log", "[-n N] [--json] [REPO]", stderr)
	tf := addTargetCommand(fs)
	n := fs.Int("n", 0, "at most this many commits (default the agent's, 100)")
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := atMost(fs, 1, "one REPO"); err != nil {
		return err
	}
	if *n < 0 {
		return fmt.Errorf("-n %d: want a count of commits", *n)
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	commits, err := t.GitLog(ctx, fs.Arg(0), *n)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, client.GitLog{Commits: commits})
	}
	for _, c := range commits {
		fmt.Fprintf(stdout, "%s %s %s  %s\n", short(c.OID), c.Time.Local().Format(time.DateOnly), c.Author, c.Subject)
	}
	return nil
}

func runGitCommit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("git commit", "-m MESSAGE [-a | -A] [--author 'NAME <EMAIL>'] [--json] [REPO]", stderr)
	tf := addTargetCommand(fs)
	var req client.GitCommitRequest
	fs.StringVar(&req.Message, "m", "", "the commit message (required)")
	fs.BoolVar(&req.All, "a", false, "stage every change to tracked files first")
	fs.BoolVar(&req.IncludeUntracked, "A", false, "stage every change first, new files too")
	author := fs.String("author", "", "the author, 'NAME <EMAIL>' (default the agent's git config)")
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := atMost(fs, 1, "one REPO"); err != nil {
		return err
	}
	if strings.TrimSpace(req.Message) == "" {
		return fmt.Errorf("a commit needs a message: -m MESSAGE")
	}
	if *author != "" {
		name, email, ok := parseAuthor(*author)
		if !ok {
			return fmt.Errorf("--author %q: want 'NAME <EMAIL>'", *author)
		}
		req.AuthorName, req.AuthorEmail = name, email
	}
	req.Path = fs.Arg(0)
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	res, err := t.GitCommit(ctx, req)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, res)
	}
	_, err = fmt.Fprintf(stdout, "[%s] %s\n", short(res.OID), res.Summary)
	return err
}

// parseAuthor splits "NAME <EMAIL>".
func parseAuthor(s string) (name, email string, ok bool) {
	name, rest, ok := strings.Cut(s, "<")
	email, tail, ok2 := strings.Cut(rest, ">")
	name, email = strings.TrimSpace(name), strings.TrimSpace(email)
	return name, email, ok && ok2 && strings.TrimSpace(tail) == "" && name != "" && email != ""
}

// maxPatch bounds the patch git apply reads (the API takes it in one body).
const maxPatch = 64 << 20

func runGitApply(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("git apply", "[--check] [--3way] [--index] [--json] PATCH|- [REPO]", stderr)
	tf := addTargetCommand(fs)
	var req client.GitApplyRequest
	fs.BoolVar(&req.Check, "check", false, "only check that the patch applies; change nothing")
	fs.BoolVar(&req.ThreeWay, "3way", false, "fall back to a three-way merge")
	fs.BoolVar(&req.Index, "index", false, "apply to the index too")
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return fmt.Errorf("want PATCH (- for stdin) and optionally REPO, got %d arguments", fs.NArg())
	}
	patch, err := readPatch(fs.Arg(0))
	if err != nil {
		return err
	}
	req.Patch, req.Path = patch, fs.Arg(1)
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	res, err := t.GitApply(ctx, req)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, res)
	}
	if req.Check {
		_, err = fmt.Fprintln(stdout, "the patch applies (nothing changed: --check)")
		return err
	}
	return nil
}

// readPatch reads a patch from name, or stdin for "-".
func readPatch(name string) (string, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPatch+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("read patch: %w", err)
	case len(b) > maxPatch:
		return "", fmt.Errorf("patch %s is over %d MiB", name, maxPatch>>20)
	case len(b) == 0:
		return "", fmt.Errorf("patch %s is empty", name)
	}
	return string(b), nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
