package git

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// RemoteOptions describe a fetch, pull or push.
type RemoteOptions struct {
	// Remote is a configured remote's name or a network URL; empty is git's
	// default (the branch's remote, else origin).
	Remote string
	// Ref is the ref or refspec to fetch, pull or push; empty is git's
	// default.
	Ref string
	// SetUpstream (push) records the pushed branch's upstream; with no Ref
	// it pushes HEAD.
	SetUpstream bool
}

// CloneOptions describe a clone.
type CloneOptions struct {
	// URL is the repository: a network URL or an absolute local path under
	// the ceiling.
	URL string
	// Dest is the new work tree's absolute path; it must not exist or be
	// an empty directory.
	Dest string
	// Ref is the branch or tag to check out; empty is the remote's HEAD.
	Ref string
	// Depth, when positive, makes a shallow clone of that many commits.
	Depth int
}

// maxSummary bounds a remote command's summary.
const maxSummary = 16 << 10

// remoteEnv is the environment of every command that may reach a remote:
// never prompt (no terminal, no askpass, ssh in batch mode) and only the
// allowed transports, redirects and submodules included.
func remoteEnv() []string {
	ssh := "ssh"
	if v := os.Getenv("GIT_SSH_COMMAND"); v != "" {
		ssh = v
	}
	return []string{
		"GIT_SSH_COMMAND=" + ssh + " -o BatchMode=yes",
		"GIT_ALLOW_PROTOCOL=" + allowProtocol,
		"SSH_ASKPASS_REQUIRE=never",
		"GCM_INTERACTIVE=never",
	}
}

// remoteArgs prefixes a remote command with configuration no repository
// can override: no askpass, no interactive credential helper.
func remoteArgs(args ...string) []string {
	return append([]string{"-c", "core.askPass=", "-c", "credential.interactive=false"}, args...)
}

// runRemote runs a command that reaches a remote and returns git's summary
// (what it printed); a failure is classified by classifyRemote.
func (g *Git) runRemote(ctx context.Context, dir string, args []string) (string, error) {
	args = remoteArgs(args...)
	res, err := g.run(ctx, call{dir: dir, args: args, env: remoteEnv()})
	if err != nil {
		return "", err
	}
	if res.code != 0 {
		return "", gitErr(classifyRemote(string(res.stderr)+string(res.stdout)), args, res)
	}
	return summary(res), nil
}

// summary is what a remote command printed, stderr first, bounded.
func summary(res result) string {
	s := strings.TrimSpace(strings.TrimSpace(string(res.stderr)) + "\n" + strings.TrimSpace(string(res.stdout)))
	if len(s) > maxSummary {
		s = s[:maxSummary]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// classifyRemote names the kind of a remote command's failure from git's
// messages (LC_ALL=C keeps them stable).
func classifyRemote(msg string) error {
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(msg, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("terminal prompts disabled", "could not read Username", "could not read Password",
		"Authentication failed", "Permission denied (", "Permission denied, please try again",
		"returned error: 401", "Access denied"):
		return ErrCredentials
	case has("[rejected]", "[remote rejected]", "failed to push some refs"):
		return ErrPushRejected
	case has("would be overwritten by merge"):
		return ErrLocalChanges
	case has("Please tell me who you are", "unable to auto-detect email address"):
		return ErrCommitRefused // a pull's merge commit needs an identity
	case has("does not appear to be a git repository", "Repository not found", "not found",
		"couldn't find remote ref", "No such remote", "does not exist"):
		return ErrRemoteNotFound
	case has("transport '") && has("not allowed"):
		return os.ErrInvalid
	}
	return ErrUnreachable
}

// checkRemotes refuses a remote git must not reach: opts.Remote as a URL
// (a network one only; local ones must be configured remotes), or the
// URLs of every configured remote when it names one or is empty, since
// git may pick any of them (a branch's remote, pushRemote).
func (g *Git) checkRemotes(ctx context.Context, dir, remote string) error {
	out, err := g.output(ctx, dir, nil, "remote")
	if err != nil {
		return err
	}
	names := strings.Fields(string(out))
	known := remote == ""
	for _, n := range names {
		known = known || n == remote
	}
	if !known {
		kind, _, err := ClassifyURL(remote)
		if err != nil {
			return err
		}
		if kind == URLLocal {
			return errorf(ErrRemoteNotFound, "no remote named %q (a remote on this machine must be configured by name)", remote)
		}
		return nil
	}
	for _, n := range names {
		for _, push := range []bool{false, true} {
			args := []string{"remote", "get-url", "--all"}
			if push {
				args = append(args, "--push")
			}
			urls, err := g.output(ctx, dir, nil, append(args, n)...)
			if err != nil {
				return err
			}
			for _, u := range strings.Split(strings.TrimSpace(string(urls)), "\n") {
				if err := g.checkURL(u); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// remoteCall checks a fetch, pull or push before it runs.
func (g *Git) remoteCall(ctx context.Context, dir string, opts RemoteOptions) error {
	if err := g.requireRepo(ctx, dir); err != nil {
		return err
	}
	if opts.Remote != "" && strings.HasPrefix(opts.Remote, "-") {
		return errorf(os.ErrInvalid, "remote %q starts with '-'", opts.Remote)
	}
	if opts.Ref != "" {
		if err := checkRef(opts.Ref); err != nil {
			return err
		}
		if opts.Remote == "" {
			return errorf(os.ErrInvalid, "a ref needs a remote")
		}
	}
	return g.checkRemotes(ctx, dir, opts.Remote)
}

// target is the remote and ref arguments of a fetch, pull or push.
func (o RemoteOptions) target() []string {
	var out []string
	if o.Remote != "" {
		out = append(out, o.Remote)
	}
	if o.Ref != "" {
		out = append(out, o.Ref)
	}
	return out
}

// Fetch fetches from a remote and returns git's summary.
func (g *Git) Fetch(ctx context.Context, dir string, opts RemoteOptions) (string, error) {
	if err := g.remoteCall(ctx, dir, opts); err != nil {
		return "", err
	}
	return g.runRemote(ctx, dir, append([]string{"fetch", "--no-recurse-submodules"}, opts.target()...))
}

// Pull fetches and merges (never rebases). A merge that stops on conflicts
// is ErrMergeConflict naming the conflicted paths (git status shows them
// unmerged); local changes in the way are ErrLocalChanges. Under a Guard
// it fetches, checks the paths the merge would change and merges the
// commits checked (guardedPull).
func (g *Git) Pull(ctx context.Context, dir string, opts RemoteOptions) (string, error) {
	if err := g.remoteCall(ctx, dir, opts); err != nil {
		return "", err
	}
	check, err := g.guardFor(ctx, dir)
	if err != nil {
		return "", err
	}
	var out string
	if check != nil {
		out, err = g.guardedPull(ctx, dir, check, opts)
	} else {
		args := append([]string{"pull", "--no-rebase", "--no-edit", "--no-recurse-submodules"}, opts.target()...)
		out, err = g.runRemote(ctx, dir, args)
	}
	if err == nil {
		return out, nil
	}
	st, serr := g.Status(ctx, dir, StatusOptions{})
	if serr != nil {
		return "", err
	}
	var conflicted []string
	for _, e := range st.Entries {
		if e.Kind == KindUnmerged {
			conflicted = append(conflicted, e.Path)
		}
	}
	if len(conflicted) == 0 {
		return "", err
	}
	sort.Strings(conflicted)
	return "", errorf(ErrMergeConflict, "git pull: merge conflict in %s; resolve and commit, or git merge --abort", strings.Join(conflicted, ", "))
}

// Push pushes to a remote and returns git's summary. A refused update is
// ErrPushRejected with git's message.
func (g *Git) Push(ctx context.Context, dir string, opts RemoteOptions) (string, error) {
	if opts.SetUpstream && opts.Ref == "" {
		if opts.Remote == "" {
			opts.Remote = "origin"
		}
		opts.Ref = "HEAD"
	}
	if err := g.remoteCall(ctx, dir, opts); err != nil {
		return "", err
	}
	args := []string{"push", "--no-recurse-submodules"}
	if opts.SetUpstream {
		args = append(args, "--set-upstream")
	}
	return g.runRemote(ctx, dir, append(args, opts.target()...))
}

// Clone clones opts.URL into opts.Dest, which must not exist (its parent
// must) or be an empty directory (else os.ErrExist). Under a Guard it
// clones without a work tree, asks about every file the checkout would
// create, and checks out only then; refused, it removes the clone.
func (g *Git) Clone(ctx context.Context, opts CloneOptions) (string, error) {
	if err := g.checkURL(opts.URL); err != nil {
		return "", err
	}
	if opts.Ref != "" {
		if err := checkRef(opts.Ref); err != nil {
			return "", err
		}
	}
	if opts.Depth < 0 {
		return "", errorf(os.ErrInvalid, "depth %d is negative", opts.Depth)
	}
	if !filepath.IsAbs(opts.Dest) {
		return "", errorf(os.ErrInvalid, "clone destination %q is not absolute", opts.Dest)
	}
	if err := emptyOrMissing(opts.Dest); err != nil {
		return "", err
	}
	_, statErr := os.Lstat(opts.Dest)
	existed := statErr == nil
	var check func([]string) error
	if g.Guard != nil {
		check = g.Guard(opts.Dest)
	}
	args := []string{"clone", "--no-recurse-submodules", "--quiet"}
	if check != nil {
		args = append(args, "--no-checkout") // checked, then checked out
	}
	if opts.Ref != "" {
		args = append(args, "--branch", opts.Ref)
	}
	if opts.Depth > 0 {
		args = append(args, "--depth", strconv.Itoa(opts.Depth))
	}
	args = append(args, "--", opts.URL, opts.Dest)
	// On failure git removes what it made.
	out, err := g.runRemote(ctx, filepath.Dir(opts.Dest), args)
	if err != nil || check == nil {
		return out, err
	}
	if err := g.checkoutClone(ctx, opts.Dest, check); err != nil {
		os.RemoveAll(filepath.Join(opts.Dest, ".git")) // all a clone without checkout made
		if !existed {
			os.Remove(opts.Dest)
		}
		return "", err
	}
	return out, nil
}

// checkoutClone checks out the work tree of a clone made without one,
// after asking check about every file it would create; nothing for a clone
// of an empty repository.
func (g *Git) checkoutClone(ctx context.Context, dir string, check func([]string) error) error {
	head, born, err := g.resolve(ctx, dir, "HEAD")
	if err != nil || !born {
		return err
	}
	empty, err := g.emptyTree(ctx, dir)
	if err != nil {
		return err
	}
	if err := g.checkChanges(ctx, dir, check, empty, []string{head}, false); err != nil {
		return err
	}
	args := []string{"checkout", "--quiet", "--no-recurse-submodules"}
	res, err := g.run(ctx, call{dir: dir, args: args})
	if err != nil {
		return err
	}
	if res.code != 0 {
		return gitErr(nil, args, res)
	}
	return nil
}

// emptyOrMissing fails with os.ErrExist unless p does not exist or is an
// empty directory (not a link to one).
func emptyOrMissing(p string) error {
	fi, err := os.Lstat(p)
	switch {
	case os.IsNotExist(err):
		return nil
	case err != nil:
		return errorf(nil, "git clone: %v", err)
	case !fi.IsDir():
		return errorf(os.ErrExist, "git clone: %s exists and is not a directory", filepath.Base(p))
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return errorf(nil, "git clone: %v", err)
	}
	if len(ents) > 0 {
		return errorf(os.ErrExist, "git clone: %s exists and is not empty", filepath.Base(p))
	}
	return nil
}
