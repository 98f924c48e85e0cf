package git

import (
	"context"
	"os"
)

// ApplyOptions control Apply.
type ApplyOptions struct {
	// Check only reports whether the patch applies; nothing changes.
	Check bool
	// ThreeWay falls back to a three-way merge when the context does not
	// match, leaving conflict markers (and ErrPatchFailed) if it fails.
	ThreeWay bool
	// Index applies to the index as well as the work tree.
	Index bool
}

// Apply applies a unified diff with `git apply`, reading the patch from stdin.
// dir must be in a work tree (else ErrNotRepository). A patch that does not
// apply, or that git cannot read, is ErrPatchFailed with git's message; an
// empty patch is os.ErrInvalid.
func (g *Git) Apply(ctx context.Context, dir string, patch []byte, opts ApplyOptions) error {
	if len(patch) == 0 {
		return errorf(os.ErrInvalid, "git apply: empty patch")
	}
	if err := g.requireRepo(ctx, dir); err != nil {
		return err
	}
	args := []string{"apply", "--whitespace=nowarn"}
	if opts.Check {
		args = append(args, "--check")
	}
	if opts.ThreeWay {
		args = append(args, "--3way")
	}
	if opts.Index {
		args = append(args, "--index")
	}
	args = append(args, "-")
	res, err := g.run(ctx, call{dir: dir, args: args, stdin: patch})
	if err != nil {
		return err
	}
	if res.code != 0 {
		return gitErr(ErrPatchFailed, args, res)
	}
	return nil
}
