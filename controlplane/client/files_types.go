package client

import "time"

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

// GitStatus is the body of GET {target}/git/status.
type GitStatus struct {
	IsRepo  bool             `json:"isRepo"`
	Branch  GitBranch        `json:"branch"`
	Entries []GitStatusEntry `json:"entries"`
}

// GitBranch describes HEAD: the branch (empty when detached), the commit
// (empty before the first), the upstream and how far ahead and behind it.
type GitBranch struct {
	Head     string `json:"head"`
	OID      string `json:"oid"`
	Upstream string `json:"upstream"`
	Ahead    int    `json:"ahead"`
	Behind   int    `json:"behind"`
	Detached bool   `json:"detached"`
	Unborn   bool   `json:"unborn"`
}

// GitStatusEntry is one changed path. Kind is changed, renamed, unmerged,
// untracked or ignored; Index and Worktree are git's status letters.
type GitStatusEntry struct {
	Path     string `json:"path"`
	OrigPath string `json:"origPath,omitempty"`
	Index    string `json:"index"`
	Worktree string `json:"worktree"`
	Kind     string `json:"kind"`
}

// GitDiff is the body of GET {target}/git/diff.
type GitDiff struct {
	Files []GitDiffFile `json:"files"`
	Patch string        `json:"patch"`
}

// GitDiffFile is one file of a diff; binary files count no lines.
type GitDiffFile struct {
	Path    string `json:"path"`
	OldPath string `json:"oldPath,omitempty"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
	Binary  bool   `json:"binary"`
}

// GitDiffOptions select a diff: the work tree against the index, the index
// against HEAD (Staged), or against Ref.
type GitDiffOptions struct {
	Path   string
	Staged bool
	Ref    string
}

// GitApplyRequest is the body of POST {target}/git/apply.
type GitApplyRequest struct {
	Path     string `json:"path,omitempty"`
	Patch    string `json:"patch"`
	Check    bool   `json:"check,omitempty"`
	ThreeWay bool   `json:"threeWay,omitempty"`
	Index    bool   `json:"index,omitempty"`
}

// GitApplyResult is the body of a successful apply: Applied is false after a
// check, which changes nothing.
type GitApplyResult struct {
	Applied bool `json:"applied"`
}

// GitCommitRequest is the body of POST {target}/git/commit.
type GitCommitRequest struct {
	Path        string `json:"path,omitempty"`
	Message     string `json:"message"`
	All         bool   `json:"all,omitempty"`
	AuthorName  string `json:"authorName,omitempty"`
	AuthorEmail string `json:"authorEmail,omitempty"`
}

// GitCommitResult is the body of a new commit.
type GitCommitResult struct {
	OID     string `json:"oid"`
	Summary string `json:"summary"`
}

// GitLog is the body of GET {target}/git/log, newest first.
type GitLog struct {
	Commits []GitCommit `json:"commits"`
}

// GitCommit is one commit of a log.
type GitCommit struct {
	OID     string    `json:"oid"`
	Author  string    `json:"author"`
	Email   string    `json:"email"`
	Time    time.Time `json:"time"`
	Subject string    `json:"subject"`
}
