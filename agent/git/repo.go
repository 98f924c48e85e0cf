package git

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// inWorkTree reports whether dir is inside a git work tree. A directory with
// no repository at or above it (up to the ceiling) is false with no error; a
// repository git refuses (unsafe ownership, corruption) is an error carrying
// git's message.
func (g *Git) inWorkTree(ctx context.Context, dir string) (bool, error) {
	args := []string{"rev-parse", "--is-inside-work-tree"}
	res, err := g.run(ctx, call{dir: dir, args: args})
	if err != nil {
		return false, err
	}
	if res.code == 0 {
		return strings.TrimSpace(string(res.stdout)) == "true", nil
	}
	if !g.hasGitDir(dir) {
		return false, nil
	}
	return false, gitErr(nil, args, res)
}

// hasGitDir reports whether dir or a parent up to the ceiling holds a .git
// entry, the way git finds a repository. It decides "not a repository" without
// reading git's messages.
func (g *Git) hasGitDir(dir string) bool {
	d, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	ceiling := ""
	if g.Ceiling != "" {
		ceiling = filepath.Clean(g.Ceiling)
	}
	for {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return true
		}
		up := filepath.Dir(d)
		if d == ceiling || up == d {
			return false
		}
		d = up
	}
}

// requireRepo fails with ErrNotRepository unless dir is in a work tree. Commands such
// as diff and apply act on plain files outside a repository; this keeps them
// from doing so.
func (g *Git) requireRepo(ctx context.Context, dir string) error {
	ok, err := g.inWorkTree(ctx, dir)
	if err != nil {
		return err
	}
	if !ok {
		return errorf(ErrNotRepository, "%s is not in a git work tree", filepath.Base(dir))
	}
	return nil
}

// resolve returns the commit rev names; ok is false when there is none (an
// unborn HEAD, an unknown ref).
func (g *Git) resolve(ctx context.Context, dir, rev string) (oid string, ok bool, err error) {
	args := []string{"rev-parse", "--verify", "--quiet", rev + "^{commit}"}
	res, err := g.run(ctx, call{dir: dir, args: args})
	switch {
	case err != nil:
		return "", false, err
	case res.code == 1:
		return "", false, nil
	case res.code != 0:
		return "", false, gitErr(nil, args, res)
	}
	return strings.TrimSpace(string(res.stdout)), true, nil
}

// emptyTree is the OID of the empty tree in dir's object format (SHA-1 or
// SHA-256), to diff against when there is no HEAD.
func (g *Git) emptyTree(ctx context.Context, dir string) (string, error) {
	args := []string{"hash-object", "-t", "tree", "--stdin"}
	res, err := g.run(ctx, call{dir: dir, args: args, stdin: []byte{}})
	if err != nil {
		return "", err
	}
	if res.code != 0 {
		return "", gitErr(nil, args, res)
	}
	return strings.TrimSpace(string(res.stdout)), nil
}
