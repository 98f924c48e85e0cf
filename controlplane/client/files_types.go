package client

import (
	"time"

	"github.com/outposthq/outpost/wire"
)

// The JSON bodies of the Files and Git calls (API.md).

// FileStat describes one file, directory or link. Path is relative to the
// agent's root ("." for the root); Mode is octal text such as "0644".
type FileStat struct {
	Name       string    `json:"name"`
	Path       string    `json:"path"`
	Type       string    `json:"type"`
	Size       int64     `json:"size"`
	Mode       string    `json:"mode"`
	ModTime    time.Time `json:"modTime"`
	LinkTarget string    `json:"linkTarget,omitempty"`
}

// FileList is the body of GET {target}/fs/list, sorted by path.
type FileList struct {
	Entries []FileStat `json:"entries"`
}

// WriteResult is the body of PUT {target}/fs/file: what was written and the
// SHA-256 (lowercase hex) of its content.
type WriteResult struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// MkdirRequest is the body of POST {target}/fs/mkdir.
type MkdirRequest struct {
	Path    string `json:"path"`
	Parents bool   `json:"parents,omitempty"`
}

// MoveRequest is the body of POST {target}/fs/move.
type MoveRequest struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// The Git bodies that JSON and the wire share are the wire's types (one
// type per shape); only the apply request differs (its patch is text here).
type (
	// GitStatus is the body of GET {target}/git/status.
	GitStatus = wire.GitStatus
	// GitBranch describes HEAD: the branch (empty when detached), the
	// commit (empty before the first), the upstream and how far ahead and
	// behind it.
	GitBranch = wire.GitBranch
	// GitStatusEntry is one changed path. Kind is changed, renamed,
	// unmerged, untracked or ignored; Index and Worktree are git's status
	// letters.
	GitStatusEntry = wire.GitStatusEntry
	// GitDiff is the body of GET {target}/git/diff.
	GitDiff = wire.GitDiff
	// GitDiffFile is one file of a diff; binary files count no lines.
	GitDiffFile = wire.GitDiffFile
	// GitDiffOptions select a diff: the work tree against the index, the
	// index against HEAD (Staged), or against Ref.
	GitDiffOptions = wire.GitDiffRequest
	// GitApplyResult is the body of a successful apply: Applied is false
	// after a check, which changes nothing.
	GitApplyResult = wire.GitApplyResult
	// GitCommitRequest is the body of POST {target}/git/commit.
	GitCommitRequest = wire.GitCommitRequest
	// GitCommitResult is the body of a new commit.
	GitCommitResult = wire.GitCommitResult
	// GitLog is the body of GET {target}/git/log, newest first.
	GitLog = wire.GitLog
	// GitCommit is one commit of a log.
	GitCommit = wire.GitCommit
	// GitStageRequest is the body of POST {target}/git/add and /git/reset:
	// paths, or all.
	GitStageRequest = wire.GitStageRequest
	// GitBranches is the body of GET {target}/git/branches.
	GitBranches = wire.GitBranches
	// GitBranchRef is one branch; remote-tracking ones are "origin/main".
	GitBranchRef = wire.GitBranchRef
	// GitBranchCreateRequest is the body of POST {target}/git/branches.
	GitBranchCreateRequest = wire.GitBranchCreateRequest
	// GitCheckoutRequest is the body of POST {target}/git/checkout.
	GitCheckoutRequest = wire.GitCheckoutRequest
	// GitCloneRequest is the body of POST {target}/git/clone.
	GitCloneRequest = wire.GitCloneRequest
	// GitRemoteRequest is the body of POST {target}/git/fetch, /pull and
	// /push.
	GitRemoteRequest = wire.GitRemoteRequest
	// GitRemoteResult is git's summary of a clone, fetch, pull or push.
	GitRemoteResult = wire.GitRemoteResult
)

// GitApplyRequest is the body of POST {target}/git/apply.
type GitApplyRequest struct {
	Path     string `json:"path,omitempty"`
	Patch    string `json:"patch"`
	Check    bool   `json:"check,omitempty"`
	ThreeWay bool   `json:"threeWay,omitempty"`
	Index    bool   `json:"index,omitempty"`
}
