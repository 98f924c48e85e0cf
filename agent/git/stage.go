package git

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// StageOptions select what Add stages or Reset unstages: the listed paths
// (taken literally, relative to dir) or, with All, everything.
type StageOptions struct {
	// Paths are the paths to stage or unstage.
	Paths []string
	// All stages every change in the work tree, new and deleted files
	// included (git add --all); for Reset it unstages everything.
	All bool
}

// check refuses options naming neither paths nor all, or both.
func (o StageOptions) check(verb string) error {
	switch {
	case o.All && len(o.Paths) > 0:
		return errorf(os.ErrInvalid, "git %s: give paths or all, not both", verb)
	case !o.All && len(o.Paths) == 0:
		return errorf(os.ErrInvalid, "git %s: give paths or all", verb)
	}
	return checkPaths(o.Paths)
}

// Add stages paths (new files too) or, with All, every change in the work
// tree. dir must be in a work tree (else ErrNotRepository); a path that
// matches nothing is os.ErrNotExist.
func (g *Git) Add(ctx context.Context, dir string, opts StageOptions) error {
	if err := opts.check("add"); err != nil {
		return err
	}
	if err := g.requireRepo(ctx, dir); err != nil {
		return err
	}
	ex, err := g.excludes(ctx, dir)
	if err != nil {
		return err
	}
	if len(ex) > 0 {
		return g.stageRun(ctx, dir, excludingArgs(opts, ex, "add", "--all"))
	}
	return g.stageRun(ctx, dir, pathArgs(opts, "add", "--all"))
}

// excludes are the pathspecs Exclude gives for dir's work tree.
func (g *Git) excludes(ctx context.Context, dir string) ([]string, error) {
	if g.Exclude == nil {
		return nil, nil
	}
	res, err := g.run(ctx, call{dir: dir, args: []string{"rev-parse", "--show-toplevel"}})
	if err != nil {
		return nil, err
	}
	if res.code != 0 {
		return nil, errorf(ErrNotRepository, "%s is not in a git work tree", filepath.Base(dir))
	}
	return g.Exclude(strings.TrimSpace(string(res.stdout))), nil
}

// excludingArgs is pathArgs with the exclude pathspecs ex after the paths,
// which are then marked literal one by one (":(literal)") since the
// exclusions need pathspec magic.
func excludingArgs(opts StageOptions, ex []string, cmd ...string) []string {
	args := append(cmd, "--")
	if opts.All {
		args = append(args, ":/")
	} else {
		for _, p := range opts.Paths {
			args = append(args, ":(literal)"+p)
		}
	}
	return append(args, ex...)
}

// Reset unstages paths or, with All, everything, leaving the work tree
// alone. On an unborn HEAD the paths leave the index.
func (g *Git) Reset(ctx context.Context, dir string, opts StageOptions) error {
	if err := opts.check("reset"); err != nil {
		return err
	}
	if err := g.requireRepo(ctx, dir); err != nil {
		return err
	}
	if _, born, err := g.resolve(ctx, dir, "HEAD"); err != nil {
		return err
	} else if !born {
		return g.stageRun(ctx, dir, pathArgs(opts, "rm", "--cached", "-r", "-q", "--ignore-unmatch"))
	}
	return g.stageRun(ctx, dir, pathArgs(opts, "reset", "-q", "HEAD"))
}

// pathArgs is cmd followed by the paths of opts, taken literally, or with
// All the whole work tree (":/", from its top whatever dir is).
func pathArgs(opts StageOptions, cmd ...string) []string {
	if opts.All {
		return append(cmd, "--", ":/")
	}
	args := append([]string{"--literal-pathspecs"}, cmd...)
	return append(append(args, "--"), opts.Paths...)
}

// stageRun runs an add, reset or rm and classifies its failure.
func (g *Git) stageRun(ctx context.Context, dir string, args []string) error {
	res, err := g.run(ctx, call{dir: dir, args: args})
	if err != nil {
		return err
	}
	if res.code == 0 {
		return nil
	}
	var kind error
	switch msg := string(res.stderr); {
	case strings.Contains(msg, "did not match any files"):
		kind = os.ErrNotExist
	case strings.Contains(msg, "outside repository"):
		kind = os.ErrInvalid
	}
	return gitErr(kind, args, res)
}
