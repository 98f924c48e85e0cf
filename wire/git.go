package wire

import (
	"strings"
	"time"
)

// Git ops. Path selects the repository directory under the root (default
// the root); git itself runs on the agent's machine.
//
// One type per shape: where the HTTP body (API.md) equals the wire body,
// the type carries both tags and serves the agent, the control plane and
// the SDK (controlplane/client aliases it). Only git.apply's request
// differs (the patch is text in JSON, bytes on the wire).
const (
	OpGitStatus = "git.status"
	OpGitDiff   = "git.diff"
	OpGitApply  = "git.apply"
	OpGitCommit = "git.commit"
	OpGitLog    = "git.log"
	OpGitAdd    = "git.add"
	OpGitReset  = "git.reset"

	OpGitBranches     = "git.branches"
	OpGitBranchCreate = "git.branch.create"
	OpGitBranchDelete = "git.branch.delete"
	OpGitCheckout     = "git.checkout"

	OpGitClone = "git.clone"
	OpGitFetch = "git.fetch"
	OpGitPull  = "git.pull"
	OpGitPush  = "git.push"
)

func init() {
	RegisterOp(OpGitStatus, OpInfo{})
	RegisterOp(OpGitDiff, OpInfo{})
	RegisterOp(OpGitLog, OpInfo{})
	RegisterOp(OpGitApply, OpInfo{Mutates: true})
	RegisterOp(OpGitCommit, OpInfo{Mutates: true})
	RegisterOp(OpGitAdd, OpInfo{Mutates: true})
	RegisterOp(OpGitReset, OpInfo{Mutates: true})
	RegisterOp(OpGitBranches, OpInfo{})
	RegisterOp(OpGitBranchCreate, OpInfo{Mutates: true})
	RegisterOp(OpGitBranchDelete, OpInfo{Mutates: true})
	RegisterOp(OpGitCheckout, OpInfo{Mutates: true})
	RegisterOp(OpGitClone, OpInfo{Mutates: true})
	RegisterOp(OpGitFetch, OpInfo{Mutates: true})
	RegisterOp(OpGitPull, OpInfo{Mutates: true})
	RegisterOp(OpGitPush, OpInfo{Mutates: true})
}

// Git limits.
const (
	// MaxGitLog bounds git.log's N.
	MaxGitLog = 10000
	// MaxRefLen bounds a ref.
	MaxRefLen = 1024
)

// GitStatusRequest is the body of git.status.
type GitStatusRequest struct {
	Path    string `msgpack:"path,omitempty" json:"path,omitempty"`
	Ignored bool   `msgpack:"ignored,omitempty" json:"ignored,omitempty"`
}

// Validate checks the path.
func (r *GitStatusRequest) Validate() error { return validPath("path", r.Path) }

// GitStatus is the result of git.status. IsRepo false means the directory
// is in no repository under the root; the rest is then empty.
type GitStatus struct {
	IsRepo  bool             `msgpack:"repo" json:"isRepo"`
	Branch  GitBranch        `msgpack:"branch" json:"branch"`
	Entries []GitStatusEntry `msgpack:"entries" json:"entries"`
}

// GitBranch describes HEAD and its upstream.
type GitBranch struct {
	Head     string `msgpack:"head" json:"head"`
	OID      string `msgpack:"oid" json:"oid"`
	Upstream string `msgpack:"up,omitempty" json:"upstream"`
	Ahead    int    `msgpack:"ahead" json:"ahead"`
	Behind   int    `msgpack:"behind" json:"behind"`
	Detached bool   `msgpack:"detached,omitempty" json:"detached"`
	Unborn   bool   `msgpack:"unborn,omitempty" json:"unborn"`
}

// GitStatusEntry is one path of a status. Kind is changed, renamed,
// unmerged, untracked or ignored; Index and Worktree are git's letters.
type GitStatusEntry struct {
	Path     string `msgpack:"path" json:"path"`
	OrigPath string `msgpack:"orig,omitempty" json:"origPath,omitempty"`
	Index    string `msgpack:"x" json:"index"`
	Worktree string `msgpack:"y" json:"worktree"`
	Kind     string `msgpack:"kind" json:"kind"`
}

// GitDiffRequest is the body of git.diff: the work tree against the index,
// or with Staged the index against HEAD, or against Ref.
type GitDiffRequest struct {
	Path   string `msgpack:"path,omitempty" json:"path,omitempty"`
	Staged bool   `msgpack:"staged,omitempty" json:"staged,omitempty"`
	Ref    string `msgpack:"ref,omitempty" json:"ref,omitempty"`
}

// Validate checks the path and ref lengths.
func (r *GitDiffRequest) Validate() error {
	if len(r.Ref) > MaxRefLen {
		return Errorf(CodeInvalidArgument, "", "ref is longer than %d bytes", MaxRefLen)
	}
	return validPath("path", r.Path)
}

// GitDiff is the result of git.diff.
type GitDiff struct {
	Files []GitDiffFile `msgpack:"files" json:"files"`
	Patch string        `msgpack:"patch" json:"patch"`
}

// GitDiffFile is one file of a diff; Binary files count no lines.
type GitDiffFile struct {
	Path    string `msgpack:"path" json:"path"`
	OldPath string `msgpack:"old,omitempty" json:"oldPath,omitempty"`
	Added   int    `msgpack:"add" json:"added"`
	Deleted int    `msgpack:"del" json:"deleted"`
	Binary  bool   `msgpack:"bin,omitempty" json:"binary"`
}

// GitApplyRequest is the body of git.apply. A patch that does not apply is
// conflict with git's message.
type GitApplyRequest struct {
	Path     string `msgpack:"path,omitempty"`
	Patch    []byte `msgpack:"patch"`
	Check    bool   `msgpack:"check,omitempty"`
	ThreeWay bool   `msgpack:"3way,omitempty"`
	Index    bool   `msgpack:"index,omitempty"`
}

// Validate checks that there is a patch.
func (r *GitApplyRequest) Validate() error {
	if len(r.Patch) == 0 {
		return Errorf(CodeInvalidArgument, "", "patch is empty")
	}
	return validPath("path", r.Path)
}

// GitApplyResult is the result of git.apply: Applied is false for a check.
type GitApplyResult struct {
	Applied bool `msgpack:"applied" json:"applied"`
}

// GitCommitRequest is the body of git.commit.
type GitCommitRequest struct {
	Path    string `msgpack:"path,omitempty" json:"path,omitempty"`
	Message string `msgpack:"msg" json:"message"`
	All     bool   `msgpack:"all,omitempty" json:"all,omitempty"`
	// IncludeUntracked stages every change first, new files included.
	IncludeUntracked bool   `msgpack:"untracked,omitempty" json:"includeUntracked,omitempty"`
	AuthorName       string `msgpack:"name,omitempty" json:"authorName,omitempty"`
	AuthorEmail      string `msgpack:"email,omitempty" json:"authorEmail,omitempty"`
}

// Validate checks that there is a message.
func (r *GitCommitRequest) Validate() error {
	if r.Message == "" {
		return Errorf(CodeInvalidArgument, "", "message is empty")
	}
	return validPath("path", r.Path)
}

// GitCommitResult is the result of git.commit.
type GitCommitResult struct {
	OID     string `msgpack:"oid" json:"oid"`
	Summary string `msgpack:"summary" json:"summary"`
}

// GitLogRequest is the body of git.log: at most N commits (default 100)
// from Ref (default HEAD), newest first.
type GitLogRequest struct {
	Path string `msgpack:"path,omitempty"`
	N    int    `msgpack:"n,omitempty"`
	Ref  string `msgpack:"ref,omitempty"`
}

// Validate checks N and the lengths.
func (r *GitLogRequest) Validate() error {
	if r.N < 0 || r.N > MaxGitLog {
		return Errorf(CodeInvalidArgument, "", "n must be 0 to %d", MaxGitLog)
	}
	if len(r.Ref) > MaxRefLen {
		return Errorf(CodeInvalidArgument, "", "ref is longer than %d bytes", MaxRefLen)
	}
	return validPath("path", r.Path)
}

// GitLog is the result of git.log.
type GitLog struct {
	Commits []GitCommit `msgpack:"commits" json:"commits"`
}

// GitCommit is one commit of a log.
type GitCommit struct {
	OID     string    `msgpack:"oid" json:"oid"`
	Author  string    `msgpack:"author" json:"author"`
	Email   string    `msgpack:"email" json:"email"`
	Time    time.Time `msgpack:"t" json:"time"`
	Subject string    `msgpack:"subject" json:"subject"`
}

// MaxGitPaths bounds the paths of one git.add or git.reset.
const MaxGitPaths = 10000

// GitStageRequest is the body of git.add (stage) and git.reset (unstage):
// Paths, or All for every change (new files included for add).
type GitStageRequest struct {
	Path  string   `msgpack:"path,omitempty" json:"path,omitempty"`
	Paths []string `msgpack:"paths,omitempty" json:"paths,omitempty"`
	All   bool     `msgpack:"all,omitempty" json:"all,omitempty"`
}

// Validate checks that there are paths or all, not both.
func (r *GitStageRequest) Validate() error {
	switch {
	case r.All && len(r.Paths) > 0:
		return Errorf(CodeInvalidArgument, "", "give paths or all, not both")
	case !r.All && len(r.Paths) == 0:
		return Errorf(CodeInvalidArgument, "", "give paths or all")
	case len(r.Paths) > MaxGitPaths:
		return Errorf(CodeInvalidArgument, "", "more than %d paths", MaxGitPaths)
	}
	for _, p := range r.Paths {
		if p == "" {
			return Errorf(CodeInvalidArgument, "", "paths holds an empty path")
		}
		if err := validPath("paths", p); err != nil {
			return err
		}
	}
	return validPath("path", r.Path)
}

// GitBranchesRequest is the body of git.branches.
type GitBranchesRequest struct {
	Path string `msgpack:"path,omitempty" json:"path,omitempty"`
}

// Validate checks the path.
func (r *GitBranchesRequest) Validate() error { return validPath("path", r.Path) }

// GitBranches is the result of git.branches: Current is empty when HEAD is
// detached; local branches come first, then remote-tracking ones.
type GitBranches struct {
	Current  string         `msgpack:"current" json:"current"`
	Branches []GitBranchRef `msgpack:"branches" json:"branches"`
}

// GitBranchRef is one branch; a remote-tracking one is named "origin/main".
type GitBranchRef struct {
	Name     string `msgpack:"name" json:"name"`
	OID      string `msgpack:"oid" json:"oid"`
	Upstream string `msgpack:"up,omitempty" json:"upstream,omitempty"`
	Remote   bool   `msgpack:"remote" json:"remote"`
}

// GitBranchCreateRequest is the body of git.branch.create: branch Name at
// From (default HEAD). The result is the new GitBranchRef.
type GitBranchCreateRequest struct {
	Path string `msgpack:"path,omitempty" json:"path,omitempty"`
	Name string `msgpack:"name" json:"name"`
	From string `msgpack:"from,omitempty" json:"from,omitempty"`
}

// Validate checks the name and lengths.
func (r *GitBranchCreateRequest) Validate() error {
	if err := validRef("name", r.Name, true); err != nil {
		return err
	}
	if err := validRef("from", r.From, false); err != nil {
		return err
	}
	return validPath("path", r.Path)
}

// GitBranchDeleteRequest is the body of git.branch.delete (no result).
type GitBranchDeleteRequest struct {
	Path  string `msgpack:"path,omitempty" json:"path,omitempty"`
	Name  string `msgpack:"name" json:"name"`
	Force bool   `msgpack:"force,omitempty" json:"force,omitempty"`
}

// Validate checks the name and lengths.
func (r *GitBranchDeleteRequest) Validate() error {
	if err := validRef("name", r.Name, true); err != nil {
		return err
	}
	return validPath("path", r.Path)
}

// GitCheckoutRequest is the body of git.checkout: switch to Ref, or with
// Create make branch Ref at HEAD and switch to it. The result is the
// GitStatus after.
type GitCheckoutRequest struct {
	Path   string `msgpack:"path,omitempty" json:"path,omitempty"`
	Ref    string `msgpack:"ref" json:"ref"`
	Create bool   `msgpack:"create,omitempty" json:"create,omitempty"`
}

// Validate checks the ref and lengths.
func (r *GitCheckoutRequest) Validate() error {
	if err := validRef("ref", r.Ref, true); err != nil {
		return err
	}
	return validPath("path", r.Path)
}

// validRef refuses a ref that is missing (when required), too long, or
// could be read as an option.
func validRef(field, ref string, required bool) error {
	switch {
	case ref == "" && required:
		return Errorf(CodeInvalidArgument, "", "%s is empty", field)
	case len(ref) > MaxRefLen:
		return Errorf(CodeInvalidArgument, "", "%s is longer than %d bytes", field, MaxRefLen)
	case strings.HasPrefix(ref, "-"):
		return Errorf(CodeInvalidArgument, "", "%s %q starts with '-'", field, ref)
	}
	return nil
}

// Remote git limits.
const (
	// MaxGitURLLen bounds a clone URL or a remote.
	MaxGitURLLen = 4096
	// MaxGitDepth bounds a shallow clone's depth.
	MaxGitDepth = 1 << 30
)

// GitCloneRequest is the body of git.clone: URL into Path (under the root;
// it must not exist or be an empty directory), optionally only Ref's
// branch or tag and Depth commits. A local URL (a path or file:///path) is
// a path under the root, like every other path. The result is a
// GitRemoteResult.
type GitCloneRequest struct {
	URL   string `msgpack:"url" json:"url"`
	Path  string `msgpack:"path" json:"path"`
	Ref   string `msgpack:"ref,omitempty" json:"ref,omitempty"`
	Depth int    `msgpack:"depth,omitempty" json:"depth,omitempty"`
}

// Validate checks the fields' presence, lengths and ranges.
func (r *GitCloneRequest) Validate() error {
	switch {
	case r.URL == "":
		return Errorf(CodeInvalidArgument, "", "url is empty")
	case len(r.URL) > MaxGitURLLen:
		return Errorf(CodeInvalidArgument, "", "url is longer than %d bytes", MaxGitURLLen)
	case strings.HasPrefix(r.URL, "-"):
		return Errorf(CodeInvalidArgument, "", "url %q starts with '-'", r.URL)
	case r.Path == "":
		return Errorf(CodeInvalidArgument, "", "path is empty")
	case r.Depth < 0 || r.Depth > MaxGitDepth:
		return Errorf(CodeInvalidArgument, "", "depth must be 0 to %d", MaxGitDepth)
	}
	if err := validRef("ref", r.Ref, false); err != nil {
		return err
	}
	return validPath("path", r.Path)
}

// GitRemoteRequest is the body of git.fetch, git.pull and git.push: Remote
// is a configured remote's name or a network URL (default git's choice),
// Ref a ref or refspec (needs Remote), SetUpstream (push) records the
// upstream (with no Ref it pushes HEAD to origin).
type GitRemoteRequest struct {
	Path        string `msgpack:"path,omitempty" json:"path,omitempty"`
	Remote      string `msgpack:"remote,omitempty" json:"remote,omitempty"`
	Ref         string `msgpack:"ref,omitempty" json:"ref,omitempty"`
	SetUpstream bool   `msgpack:"up,omitempty" json:"setUpstream,omitempty"`
}

// Validate checks the lengths and that nothing reads as an option.
func (r *GitRemoteRequest) Validate() error {
	switch {
	case len(r.Remote) > MaxGitURLLen:
		return Errorf(CodeInvalidArgument, "", "remote is longer than %d bytes", MaxGitURLLen)
	case strings.HasPrefix(r.Remote, "-"):
		return Errorf(CodeInvalidArgument, "", "remote %q starts with '-'", r.Remote)
	case r.Ref != "" && r.Remote == "":
		return Errorf(CodeInvalidArgument, "", "ref needs remote")
	}
	if err := validRef("ref", r.Ref, false); err != nil {
		return err
	}
	return validPath("path", r.Path)
}

// GitRemoteResult is the result of a clone, fetch, pull or push: what git
// printed.
type GitRemoteResult struct {
	Summary string `msgpack:"summary" json:"summary"`
}
