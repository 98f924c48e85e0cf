package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// GitStatus calls GET {target}/git/status for the repository at path (""
// is the root). A directory in no repository gives IsRepo false.
func (t *Target) GitStatus(ctx context.Context, path string) (*GitStatus, error) {
	var out GitStatus
	return &out, t.c.do(ctx, http.MethodGet, t.prefix+"/git/status?"+url.Values{"path": {path}}.Encode(), nil, &out)
}

// GitDiff calls GET {target}/git/diff.
func (t *Target) GitDiff(ctx context.Context, opts GitDiffOptions) (*GitDiff, error) {
	q := url.Values{"path": {opts.Path}, "staged": {strconv.FormatBool(opts.Staged)}}
	if opts.Ref != "" {
		q.Set("ref", opts.Ref)
	}
	var out GitDiff
	return &out, t.c.do(ctx, http.MethodGet, t.prefix+"/git/diff?"+q.Encode(), nil, &out)
}

// GitApply calls POST {target}/git/apply; a patch that does not apply is a
// conflict carrying git's message.
func (t *Target) GitApply(ctx context.Context, req GitApplyRequest) (*GitApplyResult, error) {
	var out GitApplyResult
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/git/apply", req, &out)
}

// GitCommit calls POST {target}/git/commit.
func (t *Target) GitCommit(ctx context.Context, req GitCommitRequest) (*GitCommitResult, error) {
	var out GitCommitResult
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/git/commit", req, &out)
}

// GitLog calls GET {target}/git/log: at most n commits (0: the agent's
// default of 100), newest first.
func (t *Target) GitLog(ctx context.Context, path string, n int) ([]GitCommit, error) {
	q := url.Values{"path": {path}}
	if n > 0 {
		q.Set("n", strconv.Itoa(n))
	}
	var out GitLog
	if err := t.c.do(ctx, http.MethodGet, t.prefix+"/git/log?"+q.Encode(), nil, &out); err != nil {
		return nil, err
	}
	return out.Commits, nil
}

// GitAdd calls POST {target}/git/add (new files too) and returns the
// status after.
func (t *Target) GitAdd(ctx context.Context, req GitStageRequest) (*GitStatus, error) {
	var out GitStatus
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/git/add", req, &out)
}

// GitReset calls POST {target}/git/reset (unstage) and returns the status
// after.
func (t *Target) GitReset(ctx context.Context, req GitStageRequest) (*GitStatus, error) {
	var out GitStatus
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/git/reset", req, &out)
}

// GitBranches calls GET {target}/git/branches.
func (t *Target) GitBranches(ctx context.Context, path string) (*GitBranches, error) {
	var out GitBranches
	return &out, t.c.do(ctx, http.MethodGet, t.prefix+"/git/branches?"+url.Values{"path": {path}}.Encode(), nil, &out)
}

// GitCreateBranch calls POST {target}/git/branches; a name in use is a
// conflict.
func (t *Target) GitCreateBranch(ctx context.Context, req GitBranchCreateRequest) (*GitBranchRef, error) {
	var out GitBranchRef
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/git/branches", req, &out)
}

// GitDeleteBranch calls DELETE {target}/git/branches/{name}; an unmerged
// branch without force is a conflict.
func (t *Target) GitDeleteBranch(ctx context.Context, path, name string, force bool) error {
	q := url.Values{"path": {path}, "force": {strconv.FormatBool(force)}}
	return t.c.do(ctx, http.MethodDelete, t.prefix+"/git/branches/"+url.PathEscape(name)+"?"+q.Encode(), nil, nil)
}

// GitCheckout calls POST {target}/git/checkout and returns the status
// after; local changes in the way are a conflict.
func (t *Target) GitCheckout(ctx context.Context, req GitCheckoutRequest) (*GitStatus, error) {
	var out GitStatus
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/git/checkout", req, &out)
}

// GitClone calls POST {target}/git/clone.
func (t *Target) GitClone(ctx context.Context, req GitCloneRequest) (*GitRemoteResult, error) {
	var out GitRemoteResult
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/git/clone", req, &out)
}

// GitFetch calls POST {target}/git/fetch.
func (t *Target) GitFetch(ctx context.Context, req GitRemoteRequest) (*GitRemoteResult, error) {
	return t.gitRemote(ctx, "fetch", req)
}

// GitPull calls POST {target}/git/pull; a merge that stops on conflicts is
// a conflict naming the paths.
func (t *Target) GitPull(ctx context.Context, req GitRemoteRequest) (*GitRemoteResult, error) {
	return t.gitRemote(ctx, "pull", req)
}

// GitPush calls POST {target}/git/push; a rejected push is a conflict.
func (t *Target) GitPush(ctx context.Context, req GitRemoteRequest) (*GitRemoteResult, error) {
	return t.gitRemote(ctx, "push", req)
}

// gitRemote calls POST {target}/git/{verb}.
func (t *Target) gitRemote(ctx context.Context, verb string, req GitRemoteRequest) (*GitRemoteResult, error) {
	var out GitRemoteResult
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/git/"+verb, req, &out)
}
