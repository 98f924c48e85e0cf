package git

import (
	"bytes"
	"context"
	"os"
	"strings"
)

// BranchRef is one local or remote-tracking branch.
type BranchRef struct {
	// Name is the short name: "main", or "origin/main" for a remote one.
	Name string
	// OID is the commit it points at.
	OID string
	// Upstream is a local branch's upstream, short ("origin/main").
	Upstream string
	// Remote is true for a remote-tracking branch.
	Remote bool
}

// Branches are a repository's branches and the one checked out.
type Branches struct {
	// Current is the branch HEAD is on; empty when detached.
	Current string
	// Branches are the local branches, then the remote ones, by name.
	Branches []BranchRef
}

// branchFormat is for-each-ref's format: refname, oid, upstream and symref
// target, NUL-separated, one ref a line.
const branchFormat = "%(refname)%00%(objectname)%00%(upstream:short)%00%(symref)"

// ListBranches lists the local and remote-tracking branches of the
// repository at dir (else ErrNotRepository).
func (g *Git) ListBranches(ctx context.Context, dir string) (*Branches, error) {
	if err := g.requireRepo(ctx, dir); err != nil {
		return nil, err
	}
	out, err := g.output(ctx, dir, nil, "for-each-ref", "--format="+branchFormat, "refs/heads", "refs/remotes")
	if err != nil {
		return nil, err
	}
	bs, err := ParseBranches(out)
	if err != nil {
		return nil, err
	}
	cur, err := g.currentBranch(ctx, dir)
	if err != nil {
		return nil, err
	}
	return &Branches{Current: cur, Branches: bs}, nil
}

// ParseBranches parses for-each-ref output in branchFormat. Symbolic refs
// (origin/HEAD) are left out; a line that is not four fields is an error.
func ParseBranches(out []byte) ([]BranchRef, error) {
	bs := []BranchRef{}
	for _, line := range bytes.Split(out, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		f := strings.Split(string(line), "\x00")
		if len(f) != 4 {
			return nil, errorf(nil, "git for-each-ref: unexpected line %q", line)
		}
		if f[3] != "" {
			continue
		}
		b := BranchRef{OID: f[1], Upstream: f[2]}
		switch {
		case strings.HasPrefix(f[0], "refs/heads/"):
			b.Name = strings.TrimPrefix(f[0], "refs/heads/")
		case strings.HasPrefix(f[0], "refs/remotes/"):
			b.Name, b.Remote = strings.TrimPrefix(f[0], "refs/remotes/"), true
		default:
			return nil, errorf(nil, "git for-each-ref: unexpected ref %q", f[0])
		}
		bs = append(bs, b)
	}
	return bs, nil
}

// currentBranch is the branch HEAD is on, "" when detached.
func (g *Git) currentBranch(ctx context.Context, dir string) (string, error) {
	args := []string{"symbolic-ref", "--quiet", "--short", "HEAD"}
	res, err := g.run(ctx, call{dir: dir, args: args})
	switch {
	case err != nil:
		return "", err
	case res.code == 1:
		return "", nil
	case res.code != 0:
		return "", gitErr(nil, args, res)
	}
	return strings.TrimSpace(string(res.stdout)), nil
}

// checkBranchName refuses a name git would not take for a new branch.
func (g *Git) checkBranchName(ctx context.Context, dir, name string) error {
	if err := checkRef(name); err != nil {
		return err
	}
	res, err := g.run(ctx, call{dir: dir, args: []string{"check-ref-format", "--branch", name}})
	if err != nil {
		return err
	}
	if res.code != 0 || strings.HasPrefix(name, "refs/") || name == "HEAD" {
		return errorf(os.ErrInvalid, "%q is not a valid branch name", name)
	}
	return nil
}

// branchExists reports whether local branch name exists.
func (g *Git) branchExists(ctx context.Context, dir, name string) (bool, error) {
	args := []string{"show-ref", "--verify", "--quiet", "refs/heads/" + name}
	res, err := g.run(ctx, call{dir: dir, args: args})
	switch {
	case err != nil:
		return false, err
	case res.code == 0:
		return true, nil
	case res.code == 1:
		return false, nil
	}
	return false, gitErr(nil, args, res)
}

// CreateBranch makes branch name at from (default HEAD). A name in use is
// os.ErrExist, a bad name os.ErrInvalid, an unknown from
// ErrUnknownRevision. A remote-tracking from becomes its upstream.
func (g *Git) CreateBranch(ctx context.Context, dir, name, from string) (*BranchRef, error) {
	if err := g.requireRepo(ctx, dir); err != nil {
		return nil, err
	}
	if err := g.checkBranchName(ctx, dir, name); err != nil {
		return nil, err
	}
	if from == "" {
		from = "HEAD"
	}
	if err := checkRef(from); err != nil {
		return nil, err
	}
	if exists, err := g.branchExists(ctx, dir, name); err != nil {
		return nil, err
	} else if exists {
		return nil, errorf(os.ErrExist, "git branch: branch %s exists", name)
	}
	oid, ok, err := g.resolve(ctx, dir, from)
	if err != nil {
		return nil, err
	} else if !ok {
		return nil, errorf(ErrUnknownRevision, "git branch: %s names no commit", from)
	}
	if _, err := g.output(ctx, dir, nil, "branch", name, from); err != nil {
		return nil, err
	}
	up, _ := g.output(ctx, dir, nil, "for-each-ref", "--format=%(upstream:short)", "refs/heads/"+name)
	return &BranchRef{Name: name, OID: oid, Upstream: strings.TrimSpace(string(up))}, nil
}

// DeleteBranch deletes local branch name. Unknown is os.ErrNotExist; the
// branch checked out, or one not merged into HEAD or its upstream without
// force, ErrNotMerged / ErrBranchInUse (conflicts) with git's message.
func (g *Git) DeleteBranch(ctx context.Context, dir, name string, force bool) error {
	if err := g.requireRepo(ctx, dir); err != nil {
		return err
	}
	if err := checkRef(name); err != nil {
		return err
	}
	if exists, err := g.branchExists(ctx, dir, name); err != nil {
		return err
	} else if !exists {
		return errorf(os.ErrNotExist, "git branch: no branch %s", name)
	}
	if cur, err := g.currentBranch(ctx, dir); err != nil {
		return err
	} else if cur == name {
		return errorf(ErrBranchInUse, "git branch: %s is checked out", name)
	}
	args := []string{"branch", "--delete", name}
	if force {
		args = []string{"branch", "--delete", "--force", name}
	}
	res, err := g.run(ctx, call{dir: dir, args: args})
	if err != nil || res.code == 0 {
		return err
	}
	kind := ErrBranchInUse // checked out in another worktree
	if strings.Contains(string(res.stderr), "not fully merged") {
		kind = ErrNotMerged
	}
	return gitErr(kind, args, res)
}

// Checkout switches the work tree to ref: a branch, a tag or a commit
// (detached), or a remote branch's name that one remote has (a new
// tracking branch, as git does). With create, ref is a new branch at HEAD
// (os.ErrExist when it exists). Local changes that would be lost are
// ErrLocalChanges with git's message; an unknown ref ErrUnknownRevision.
// Under a Guard, the paths the checkout would change are checked first
// (guardCheckout); submodules' work trees are never updated.
func (g *Git) Checkout(ctx context.Context, dir, ref string, create bool) error {
	if err := g.requireRepo(ctx, dir); err != nil {
		return err
	}
	if err := checkRef(ref); err != nil {
		return err
	}
	args := []string{"checkout", "--quiet", "--no-recurse-submodules", ref, "--"}
	if !create {
		if err := g.guardCheckout(ctx, dir, ref); err != nil {
			return err
		}
	} else {
		if err := g.checkBranchName(ctx, dir, ref); err != nil {
			return err
		}
		if exists, err := g.branchExists(ctx, dir, ref); err != nil {
			return err
		} else if exists {
			return errorf(os.ErrExist, "git checkout: branch %s exists", ref)
		}
		args = []string{"checkout", "--quiet", "-b", ref}
	}
	res, err := g.run(ctx, call{dir: dir, args: args})
	if err != nil || res.code == 0 {
		return err
	}
	msg := string(res.stderr)
	switch {
	case strings.Contains(msg, "would be overwritten") || strings.Contains(msg, "you need to resolve your current index"):
		return gitErr(ErrLocalChanges, args, res)
	case strings.Contains(msg, "did not match any") || strings.Contains(msg, "invalid reference") ||
		strings.Contains(msg, "is not a commit"):
		return gitErr(ErrUnknownRevision, args, res)
	}
	return gitErr(nil, args, res)
}
