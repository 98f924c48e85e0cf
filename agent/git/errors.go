package git

import (
	"errors"
	"fmt"
)

// The kinds of error this package returns. Every error from a Git method
// wraps at most one kind, so callers classify it with errors.Is: one of
// these, os.ErrInvalid (an argument refused before or by git), os.ErrNotExist
// (no such directory), or the context's error (context.DeadlineExceeded,
// context.Canceled) when the caller's context ended the command. An error of
// no kind is git failing where it should not (a bug, a broken repository);
// it carries git's message. The agent maps the kinds to wire errors in one
// place, at its dispatch.
var (
	// ErrNoGit: the git executable could not be started: it is not
	// installed, or not where Git.Path says.
	ErrNoGit = errors.New("git is not installed")
	// ErrNotRepository: the directory is in no git work tree (up to the
	// ceiling).
	ErrNotRepository = errors.New("not in a git work tree")
	// ErrUnknownRevision: a ref names no commit, or HEAD has none yet.
	ErrUnknownRevision = errors.New("unknown revision")
	// ErrPatchFailed: git apply refused the patch (it does not apply, or is
	// not a patch), or a three-way apply left conflicts; it carries git's
	// message.
	ErrPatchFailed = errors.New("patch does not apply")
	// ErrNothingToCommit: neither the index nor (with All) the tracked
	// files hold a change.
	ErrNothingToCommit = errors.New("nothing to commit")
	// ErrUnmerged: the index has unmerged paths.
	ErrUnmerged = errors.New("unmerged paths")
	// ErrCommitRefused: git commit failed (a hook, no identity); it carries
	// git's message.
	ErrCommitRefused = errors.New("git refused the commit")
	// ErrNotMerged: a branch to delete is not merged and force was not
	// given.
	ErrNotMerged = errors.New("branch not merged")
	// ErrBranchInUse: a branch to delete is checked out.
	ErrBranchInUse = errors.New("branch checked out")
	// ErrLocalChanges: a checkout or pull would overwrite local changes;
	// it carries git's message.
	ErrLocalChanges = errors.New("local changes in the way")
	// ErrOutsideRoot: a local remote or clone target lies outside the
	// ceiling (the agent's root).
	ErrOutsideRoot = errors.New("outside the root")
	// ErrCredentials: the remote wants a credential the machine's git does
	// not have (git never prompts); it carries git's message.
	ErrCredentials = errors.New("git credentials needed")
	// ErrPushRejected: the remote refused a push (not a fast-forward, a
	// hook); it carries git's message.
	ErrPushRejected = errors.New("push rejected")
	// ErrMergeConflict: a pull's merge stopped on conflicts; the message
	// names the conflicted paths.
	ErrMergeConflict = errors.New("merge conflict")
	// ErrRemoteNotFound: the remote has no such repository or ref, or no
	// remote of that name is configured.
	ErrRemoteNotFound = errors.New("remote repository or ref not found")
	// ErrUnreachable: the remote could not be reached or failed; it
	// carries git's message.
	ErrUnreachable = errors.New("remote unreachable")
	// ErrOutputTooLarge: a command printed more than MaxOutput bytes.
	ErrOutputTooLarge = errors.New("git output too large")
)

// kindError is an error of one kind with its message; errors.Is sees the
// kind only.
type kindError struct {
	kind error // nil: a failure of no kind
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// errorf makes an error of kind with a formatted message.
func errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}
