package agent

import (
	"context"
	"path"
	"path/filepath"
	"time"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/agent/git"
	"github.com/outposthq/outpost/wire"
)

// gitProbeTimeout bounds `git version` when the agent starts.
const gitProbeTimeout = 5 * time.Second

// The git domain package knows nothing of the wire (internal/deptest); its
// result types have the wire's fields in the wire's order, so each converts
// with a plain type conversion, and a field added on one side only fails to
// compile here.

// repoDir is the host directory of the repository path p under the root.
func (fo *fileOps) repoDir(p string) (string, error) {
	if fo.gitVer == "" {
		return "", wire.Errorf(wire.CodeUnsupported, wire.ReasonExecutableNotFound, "git is not installed on this agent's machine")
	}
	return fo.fs.HostDir(p)
}

func (fo *fileOps) gitStatus(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.GitStatusRequest](req)
	if err != nil {
		return nil, err
	}
	dir, err := fo.repoDir(body.Path)
	if err != nil {
		return nil, err
	}
	return fo.statusOf(ctx, dir, body.Ignored)
}

// statusOf is the wire status of the repository at host directory dir.
func (fo *fileOps) statusOf(ctx context.Context, dir string, ignored bool) (*wire.GitStatus, error) {
	st, err := fo.git.Status(ctx, dir, git.StatusOptions{Ignored: ignored})
	if err != nil {
		return nil, err
	}
	out := &wire.GitStatus{IsRepo: st.IsRepo, Branch: wire.GitBranch(st.Branch), Entries: make([]wire.GitStatusEntry, len(st.Entries))}
	for i, e := range st.Entries {
		out.Entries[i] = wire.GitStatusEntry{Path: e.Path, OrigPath: e.OrigPath, Index: e.Index, Worktree: e.Worktree, Kind: e.Kind}
	}
	return out, nil
}

func (fo *fileOps) gitDiff(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.GitDiffRequest](req)
	if err != nil {
		return nil, err
	}
	dir, err := fo.repoDir(body.Path)
	if err != nil {
		return nil, err
	}
	d, err := fo.git.Diff(ctx, dir, git.DiffOptions{Staged: body.Staged, Ref: body.Ref})
	if err != nil {
		return nil, err
	}
	out := &wire.GitDiff{Files: make([]wire.GitDiffFile, len(d.Files)), Patch: d.Patch}
	for i, f := range d.Files {
		out.Files[i] = wire.GitDiffFile(f)
	}
	return out, nil
}

func (fo *fileOps) gitApply(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.GitApplyRequest](req)
	if err != nil {
		return nil, err
	}
	dir, err := fo.repoDir(body.Path)
	if err != nil {
		return nil, err
	}
	opts := git.ApplyOptions{Check: body.Check, ThreeWay: body.ThreeWay, Index: body.Index}
	if err := fo.git.Apply(ctx, dir, body.Patch, opts); err != nil {
		return nil, err
	}
	return &wire.GitApplyResult{Applied: !body.Check}, nil
}

func (fo *fileOps) gitCommit(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.GitCommitRequest](req)
	if err != nil {
		return nil, err
	}
	dir, err := fo.repoDir(body.Path)
	if err != nil {
		return nil, err
	}
	res, err := fo.git.Commit(ctx, dir, git.CommitOptions{Message: body.Message, All: body.All,
		IncludeUntracked: body.IncludeUntracked, AuthorName: body.AuthorName, AuthorEmail: body.AuthorEmail})
	if err != nil {
		return nil, err
	}
	return (*wire.GitCommitResult)(res), nil
}

func (fo *fileOps) gitLog(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.GitLogRequest](req)
	if err != nil {
		return nil, err
	}
	dir, err := fo.repoDir(body.Path)
	if err != nil {
		return nil, err
	}
	cs, err := fo.git.Log(ctx, dir, git.LogOptions{Max: body.N, Ref: body.Ref})
	if err != nil {
		return nil, err
	}
	out := &wire.GitLog{Commits: make([]wire.GitCommit, len(cs))}
	for i, c := range cs {
		out.Commits[i] = wire.GitCommit(c)
	}
	return out, nil
}

func (fo *fileOps) gitAdd(ctx context.Context, req *wire.Request) (any, error) {
	return fo.gitStage(ctx, req, fo.git.Add)
}

func (fo *fileOps) gitReset(ctx context.Context, req *wire.Request) (any, error) {
	return fo.gitStage(ctx, req, fo.git.Reset)
}

// gitStage runs add or reset and answers with the status that follows.
func (fo *fileOps) gitStage(ctx context.Context, req *wire.Request, stage func(context.Context, string, git.StageOptions) error) (any, error) {
	body, err := decode[wire.GitStageRequest](req)
	if err != nil {
		return nil, err
	}
	dir, err := fo.repoDir(body.Path)
	if err != nil {
		return nil, err
	}
	if err := stage(ctx, dir, git.StageOptions{Paths: body.Paths, All: body.All}); err != nil {
		return nil, err
	}
	return fo.statusOf(ctx, dir, false)
}

// gitHandlers are the git ops of issue 16 (stage, branch, remote), kept
// apart from registerFiles's table.
func (fo *fileOps) gitHandlers() map[string]Handler {
	return map[string]Handler{
		wire.OpGitAdd: fo.gitAdd, wire.OpGitReset: fo.gitReset,
		wire.OpGitBranches: fo.gitBranches, wire.OpGitBranchCreate: fo.gitBranchCreate,
		wire.OpGitBranchDelete: fo.gitBranchDelete, wire.OpGitCheckout: fo.gitCheckout,
		wire.OpGitClone: fo.gitClone, wire.OpGitFetch: fo.gitRemote(fo.git.Fetch),
		wire.OpGitPull: fo.gitRemote(fo.git.Pull), wire.OpGitPush: fo.gitRemote(fo.git.Push),
	}
}

func (fo *fileOps) gitBranches(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.GitBranchesRequest](req)
	if err != nil {
		return nil, err
	}
	dir, err := fo.repoDir(body.Path)
	if err != nil {
		return nil, err
	}
	bs, err := fo.git.ListBranches(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := &wire.GitBranches{Current: bs.Current, Branches: make([]wire.GitBranchRef, len(bs.Branches))}
	for i, b := range bs.Branches {
		out.Branches[i] = wire.GitBranchRef(b)
	}
	return out, nil
}

func (fo *fileOps) gitBranchCreate(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.GitBranchCreateRequest](req)
	if err != nil {
		return nil, err
	}
	dir, err := fo.repoDir(body.Path)
	if err != nil {
		return nil, err
	}
	b, err := fo.git.CreateBranch(ctx, dir, body.Name, body.From)
	if err != nil {
		return nil, err
	}
	return (*wire.GitBranchRef)(b), nil
}

func (fo *fileOps) gitBranchDelete(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.GitBranchDeleteRequest](req)
	if err != nil {
		return nil, err
	}
	dir, err := fo.repoDir(body.Path)
	if err != nil {
		return nil, err
	}
	return struct{}{}, fo.git.DeleteBranch(ctx, dir, body.Name, body.Force)
}

func (fo *fileOps) gitCheckout(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.GitCheckoutRequest](req)
	if err != nil {
		return nil, err
	}
	dir, err := fo.repoDir(body.Path)
	if err != nil {
		return nil, err
	}
	if err := fo.git.Checkout(ctx, dir, body.Ref, body.Create); err != nil {
		return nil, err
	}
	return fo.statusOf(ctx, dir, false)
}

// gitRemote serves a fetch, pull or push.
func (fo *fileOps) gitRemote(run func(context.Context, string, git.RemoteOptions) (string, error)) Handler {
	return func(ctx context.Context, req *wire.Request) (any, error) {
		body, err := decode[wire.GitRemoteRequest](req)
		if err != nil {
			return nil, err
		}
		dir, err := fo.repoDir(body.Path)
		if err != nil {
			return nil, err
		}
		out, err := run(ctx, dir, git.RemoteOptions{Remote: body.Remote, Ref: body.Ref, SetUpstream: body.SetUpstream})
		if err != nil {
			return nil, err
		}
		return &wire.GitRemoteResult{Summary: out}, nil
	}
}

// gitClone serves git.clone. A local URL is a path under the root (as
// every path of the API): it is confined here and handed to git as the host
// path; the destination's parents are made under the root.
func (fo *fileOps) gitClone(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.GitCloneRequest](req)
	if err != nil {
		return nil, err
	}
	if fo.gitVer == "" {
		return nil, wire.Errorf(wire.CodeUnsupported, wire.ReasonExecutableNotFound, "git is not installed on this agent's machine")
	}
	url := body.URL
	kind, local, err := git.ClassifyURL(url)
	if err != nil {
		return nil, err
	}
	if kind == git.URLLocal {
		if url, err = fo.fs.HostDir(local); err != nil {
			return nil, err
		}
	}
	dest, err := fo.cloneDest(body.Path)
	if err != nil {
		return nil, err
	}
	out, err := fo.git.Clone(ctx, git.CloneOptions{URL: url, Dest: dest, Ref: body.Ref, Depth: body.Depth})
	if err != nil {
		return nil, err
	}
	return &wire.GitRemoteResult{Summary: out}, nil
}

// cloneDest is the host path of clone destination p under the root, its
// parents made (confined).
func (fo *fileOps) cloneDest(p string) (string, error) {
	c, err := files.Clean(p)
	if err != nil {
		return "", err
	}
	parent := path.Dir(c)
	if c == "." {
		parent = "."
	} else if err := fo.fs.Mkdir(parent, true); err != nil {
		return "", err
	}
	host, err := fo.fs.HostDir(parent)
	if err != nil {
		return "", err
	}
	if c == "." {
		return host, nil
	}
	return filepath.Join(host, path.Base(c)), nil
}
