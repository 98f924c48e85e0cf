package git

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// guardFor is the check Guard gives for the work tree holding dir; nil
// when there is no Guard or it has nothing to check there.
func (g *Git) guardFor(ctx context.Context, dir string) (func(paths []string) error, error) {
	if g.Guard == nil {
		return nil, nil
	}
	args := []string{"rev-parse", "--show-toplevel"}
	res, err := g.run(ctx, call{dir: dir, args: args})
	if err != nil {
		return nil, err
	}
	if res.code != 0 {
		return nil, errorf(ErrNotRepository, "%s is not in a git work tree", filepath.Base(dir))
	}
	return g.Guard(strings.TrimSpace(string(res.stdout))), nil
}

// changedPaths are the paths that differ between the commits (or trees)
// from and to, both sides of a rename, submodules by their own path
// (diff-tree is plumbing: no rename or diff configuration applies).
func (g *Git) changedPaths(ctx context.Context, dir, from, to string) ([]string, error) {
	args := []string{"diff-tree", "-r", "-z", "--name-only", "--no-renames", "--no-commit-id", from, to}
	res, err := g.run(ctx, call{dir: dir, args: args})
	if err != nil {
		return nil, err
	}
	if res.code != 0 {
		return nil, gitErr(nil, args, res)
	}
	return splitNUL(res.stdout), nil
}

// headOrEmpty is HEAD's commit, or the empty tree on an unborn HEAD.
func (g *Git) headOrEmpty(ctx context.Context, dir string) (string, bool, error) {
	head, born, err := g.resolve(ctx, dir, "HEAD")
	if err != nil || born {
		return head, born, err
	}
	empty, err := g.emptyTree(ctx, dir)
	return empty, false, err
}

// guardCheckout asks Guard about every path a checkout of ref would
// change: those that differ between HEAD and each commit ref may name
// for git checkout (a branch of that name, what rev-parse makes of it,
// else a remote branch of that name on any remote). A path the checkout
// would write, delete or carry over is in one of those diffs: a local
// change git carries is on a path the two commits agree on, and an
// untracked or ignored file the checkout would overwrite is added by the
// target. A ref that names nothing is git's unknown revision, answered
// without running the checkout.
func (g *Git) guardCheckout(ctx context.Context, dir, ref string) error {
	check, err := g.guardFor(ctx, dir)
	if err != nil || check == nil {
		return err
	}
	from, _, err := g.headOrEmpty(ctx, dir)
	if err != nil {
		return err
	}
	var targets []string
	for _, rev := range []string{"refs/heads/" + ref, ref} {
		// Any failure means it names nothing ("refs/heads/main@{upstream}"
		// is an error rather than a miss).
		res, err := g.run(ctx, call{dir: dir, args: []string{"rev-parse", "--verify", "--quiet", rev + "^{commit}"}})
		if err != nil {
			return err
		}
		if oid := strings.TrimSpace(string(res.stdout)); res.code == 0 && oid != "" {
			targets = append(targets, oid)
		}
	}
	if len(targets) == 0 {
		out, err := g.output(ctx, dir, nil, "for-each-ref", "--format=%(objectname)", "refs/remotes/*/"+ref)
		if err != nil {
			return err
		}
		targets = strings.Fields(string(out))
	}
	if len(targets) == 0 {
		return errorf(ErrUnknownRevision, "git checkout: %s did not match any branch, tag or commit", ref)
	}
	return g.checkChanges(ctx, dir, check, from, targets, false)
}

// checkChanges asks check about the paths that differ between from and
// each of targets; with mergeBase, between each target and its merge base
// with from (what a merge brings in), or from itself when they have none.
func (g *Git) checkChanges(ctx context.Context, dir string, check func([]string) error, from string, targets []string, mergeBase bool) error {
	for _, to := range targets {
		base := from
		if mergeBase {
			res, err := g.run(ctx, call{dir: dir, args: []string{"merge-base", from, to}})
			if err != nil {
				return err
			}
			if b := strings.TrimSpace(string(res.stdout)); res.code == 0 && b != "" {
				base = b
			}
		}
		paths, err := g.changedPaths(ctx, dir, base, to)
		if err != nil {
			return err
		}
		if err := check(paths); err != nil {
			return err
		}
	}
	return nil
}

// guardedPull is Pull under a Guard: fetch, ask Guard about every path
// the merge of what was fetched would change, then merge exactly the
// commits checked (as git pull does: the FETCH_HEAD entries marked for
// merge, with git's merge message, pull.ff applied). The merge runs
// without directory rename detection, which could move a file of ours to
// a path the fetched commits do not name, and without recursing into
// submodules.
func (g *Git) guardedPull(ctx context.Context, dir string, check func([]string) error, opts RemoteOptions) (string, error) {
	fetched, err := g.runRemote(ctx, dir, append([]string{"fetch", "--no-recurse-submodules"}, opts.target()...))
	if err != nil {
		return "", err
	}
	fh, err := g.output(ctx, dir, nil, "rev-parse", "--git-path", "FETCH_HEAD")
	if err != nil {
		return "", err
	}
	name := strings.TrimSpace(string(fh))
	if !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	fetchHead, err := os.ReadFile(name)
	if err != nil {
		return "", errorf(nil, "git pull: %v", err)
	}
	var heads []string
	for _, line := range strings.Split(string(fetchHead), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) == 3 && f[1] == "" {
			heads = append(heads, f[0])
		}
	}
	if len(heads) == 0 {
		return "", errorf(os.ErrInvalid, "git pull: nothing to merge (no ref given and the current branch has no upstream)")
	}
	from, born, err := g.headOrEmpty(ctx, dir)
	if err != nil {
		return "", err
	}
	if err := g.checkChanges(ctx, dir, check, from, heads, born); err != nil {
		return "", err
	}
	msg, err := g.run(ctx, call{dir: dir, args: []string{"fmt-merge-msg", "-F", name}})
	if err != nil {
		return "", err
	}
	args := []string{"-c", "merge.directoryRenames=false", "-c", "submodule.recurse=false", "merge", "--no-edit"}
	ff, err := g.run(ctx, call{dir: dir, args: []string{"config", "--get", "pull.ff"}})
	if err != nil {
		return "", err
	}
	switch strings.TrimSpace(string(ff.stdout)) { // git pull's pull.ff, as it hands it to merge
	case "only":
		args = append(args, "--ff-only")
	case "false":
		args = append(args, "--no-ff")
	}
	if m := strings.TrimSpace(string(msg.stdout)); msg.code == 0 && m != "" {
		args = append(args, "-m", m)
	}
	res, err := g.run(ctx, call{dir: dir, args: append(args, heads...)})
	if err != nil {
		return "", err
	}
	if res.code != 0 {
		msg := string(res.stderr) + string(res.stdout)
		kind := error(nil)
		if strings.Contains(msg, "would be overwritten") {
			kind = ErrLocalChanges
		}
		return "", gitErr(kind, args, res)
	}
	return strings.TrimSpace(fetched + "\n" + summary(res)), nil
}
