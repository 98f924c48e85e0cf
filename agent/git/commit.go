package git

import (
	"context"
	"os"
	"strings"
)

// CommitOptions describe a commit.
type CommitOptions struct {
	// Message is the commit message; it must not be blank.
	Message string
	// All stages modified and deleted tracked files first (commit -a);
	// untracked files are not added unless IncludeUntracked.
	All bool
	// IncludeUntracked stages every change first, new files included
	// (git add --all); files .gitignore names stay out.
	IncludeUntracked bool
	// AuthorName and AuthorEmail, when set, are the author and committer
	// (so a machine with no git identity configured can commit). Either may
	// be set alone.
	AuthorName, AuthorEmail string
}

// CommitResult describes a new commit.
type CommitResult struct {
	// OID is the new commit's id.
	OID string
	// Summary is its subject line, as git stored it.
	Summary string
}

// Commit records the index (with All, also tracked changes in the work tree)
// as a new commit. dir must be in a work tree (else ErrNotRepository).
// Nothing to commit is ErrNothingToCommit, unresolved merge conflicts
// ErrUnmerged, git refusing (a hook, no identity) ErrCommitRefused with git's
// message, a blank message or a bad author os.ErrInvalid.
func (g *Git) Commit(ctx context.Context, dir string, opts CommitOptions) (*CommitResult, error) {
	env, err := commitEnv(opts)
	if err != nil {
		return nil, err
	}
	if opts.IncludeUntracked {
		if err := g.Add(ctx, dir, StageOptions{All: true}); err != nil {
			return nil, err
		}
	}
	st, err := g.Status(ctx, dir, StatusOptions{})
	if err != nil {
		return nil, err
	}
	if !st.IsRepo {
		return nil, errorf(ErrNotRepository, "git commit: not in a git work tree")
	}
	if err := committable(st, opts.All); err != nil {
		return nil, err
	}
	args := []string{"commit", "--no-edit", "--file=-"}
	if opts.All {
		ex, err := g.excludes(ctx, dir)
		if err != nil {
			return nil, err
		}
		if len(ex) == 0 {
			args = append(args, "--all")
		} else if err := g.stageRun(ctx, dir, append([]string{"add", "--update", "--", ":/"}, ex...)); err != nil {
			return nil, err // commit -a, leaving the excluded files out
		}
	}
	res, err := g.run(ctx, call{dir: dir, args: args, stdin: []byte(opts.Message), env: env})
	if err != nil {
		return nil, err
	}
	if res.code != 0 {
		return nil, gitErr(ErrCommitRefused, args, res)
	}
	return g.headSummary(ctx, dir)
}

// commitEnv checks opts and returns the identity variables to set.
func commitEnv(opts CommitOptions) ([]string, error) {
	if strings.TrimSpace(opts.Message) == "" {
		return nil, errorf(os.ErrInvalid, "git commit: empty message")
	}
	if strings.IndexByte(opts.Message, 0) >= 0 {
		return nil, errorf(os.ErrInvalid, "git commit: message holds a NUL byte")
	}
	var env []string
	for _, v := range []struct{ value, name string }{
		{opts.AuthorName, "NAME"}, {opts.AuthorEmail, "EMAIL"},
	} {
		if v.value == "" {
			continue
		}
		if strings.ContainsAny(v.value, "<>\x00\n\r") {
			return nil, errorf(os.ErrInvalid, "git commit: author %s %q holds <, >, NUL or a newline", strings.ToLower(v.name), v.value)
		}
		env = append(env, "GIT_AUTHOR_"+v.name+"="+v.value, "GIT_COMMITTER_"+v.name+"="+v.value)
	}
	return env, nil
}

// committable refuses a commit that would record nothing or that has
// unmerged paths.
func committable(st *Status, all bool) error {
	staged := false
	for _, e := range st.Entries {
		switch {
		case e.Kind == KindUnmerged:
			return errorf(ErrUnmerged, "git commit: unmerged path %s", e.Path)
		case e.Kind != KindChanged && e.Kind != KindRenamed:
		case e.Index != "." || all && e.Worktree != ".":
			staged = true
		}
	}
	if !staged {
		return errorf(ErrNothingToCommit, "git commit: nothing to commit")
	}
	return nil
}

// headSummary describes the commit at HEAD.
func (g *Git) headSummary(ctx context.Context, dir string) (*CommitResult, error) {
	out, err := g.output(ctx, dir, nil, "show", "-s", "--no-show-signature", "--format=%H%x00%s", "HEAD")
	if err != nil {
		return nil, err
	}
	oid, subject, ok := strings.Cut(strings.TrimSuffix(string(out), "\n"), "\x00")
	if !ok {
		return nil, errorf(nil, "git show: unexpected output %q", out)
	}
	return &CommitResult{OID: oid, Summary: subject}, nil
}
