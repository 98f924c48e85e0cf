package controlplane

import (
	"net/http"
	"strconv"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// maxPatchBody bounds POST {target}/git/apply; the patch must also fit one
// NATS message.
const maxPatchBody = 8 << 20

// handleGitStatus serves GET {target}/git/status?path=&ignored=.
func (s *Server) handleGitStatus(w http.ResponseWriter, r *http.Request, t target) error {
	q := r.URL.Query()
	ignored, err := boolParam(q, "ignored", false)
	if err != nil {
		return err
	}
	var st wire.GitStatus
	if err := t.Call(r.Context(), wire.OpGitStatus, &wire.GitStatusRequest{Path: q.Get("path"), Ignored: ignored}, &st, fileCall()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, &st)
	return nil
}

// handleGitDiff serves GET {target}/git/diff?path=&staged=&ref=.
func (s *Server) handleGitDiff(w http.ResponseWriter, r *http.Request, t target) error {
	q := r.URL.Query()
	staged, err := boolParam(q, "staged", false)
	if err != nil {
		return err
	}
	var d wire.GitDiff
	body := &wire.GitDiffRequest{Path: q.Get("path"), Staged: staged, Ref: q.Get("ref")}
	if err := t.Call(r.Context(), wire.OpGitDiff, body, &d, fileCall()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, &d)
	return nil
}

// handleGitApply serves POST {target}/git/apply: 200 {"applied"}; a patch
// that does not apply is 409 with git's message.
func (s *Server) handleGitApply(w http.ResponseWriter, r *http.Request, t target) error {
	var req client.GitApplyRequest
	if err := decodeJSON(w, r, maxPatchBody, &req); err != nil {
		return err
	}
	body := &wire.GitApplyRequest{Path: req.Path, Patch: []byte(req.Patch), Check: req.Check, ThreeWay: req.ThreeWay, Index: req.Index}
	if err := body.Validate(); err != nil {
		return err
	}
	var res wire.GitApplyResult
	if err := t.Call(r.Context(), wire.OpGitApply, body, &res, fileCall()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, &res)
	return nil
}

// handleGitCommit serves POST {target}/git/commit: 201 {"oid","summary"}.
func (s *Server) handleGitCommit(w http.ResponseWriter, r *http.Request, t target) error {
	body := &wire.GitCommitRequest{}
	if err := decodeJSON(w, r, maxJSONBody, body); err != nil {
		return err
	}
	if err := body.Validate(); err != nil {
		return err
	}
	var res wire.GitCommitResult
	if err := t.Call(r.Context(), wire.OpGitCommit, body, &res, fileCall()); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, &res)
	return nil
}

// handleGitLog serves GET {target}/git/log?path=&n=&ref=.
func (s *Server) handleGitLog(w http.ResponseWriter, r *http.Request, t target) error {
	q := r.URL.Query()
	body := &wire.GitLogRequest{Path: q.Get("path"), Ref: q.Get("ref")}
	if v := q.Get("n"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return wire.Errorf(wire.CodeInvalidArgument, "", "n must be a number, not %q", v)
		}
		body.N = n
	}
	if err := body.Validate(); err != nil {
		return err
	}
	var res wire.GitLog
	if err := t.Call(r.Context(), wire.OpGitLog, body, &res, fileCall()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, &res)
	return nil
}

// routeGit mounts the git calls of issue 16 (stage, branch, remote) under
// every target; routeFiles mounts the first five.
func (s *Server) routeGit(mux *http.ServeMux) {
	s.handleTarget(mux, "POST", "/git/add", s.handleGitStage(wire.OpGitAdd))
	s.handleTarget(mux, "POST", "/git/reset", s.handleGitStage(wire.OpGitReset))
	s.handleTarget(mux, "GET", "/git/branches", s.handleGitBranches)
	s.handleTarget(mux, "POST", "/git/branches", s.handleGitBranchCreate)
	s.handleTarget(mux, "DELETE", "/git/branches/{name...}", s.handleGitBranchDelete)
	s.handleTarget(mux, "POST", "/git/checkout", s.handleGitCheckout)
	s.handleTarget(mux, "POST", "/git/clone", s.handleGitClone)
	s.handleTarget(mux, "POST", "/git/fetch", s.handleGitRemote(wire.OpGitFetch))
	s.handleTarget(mux, "POST", "/git/pull", s.handleGitRemote(wire.OpGitPull))
	s.handleTarget(mux, "POST", "/git/push", s.handleGitRemote(wire.OpGitPush))
}

// gitRemoteTimeout bounds a clone, fetch, pull or push: longer than a file
// call, since it crosses the network twice.
const gitRemoteTimeout = 10 * time.Minute

// gitRemoteCall is the rpc options of a remote git call.
func gitRemoteCall() rpc.CallOptions { return rpc.CallOptions{Timeout: gitRemoteTimeout} }

// handleGitClone serves POST {target}/git/clone: 201 {"summary"}.
func (s *Server) handleGitClone(w http.ResponseWriter, r *http.Request, t target) error {
	body := &wire.GitCloneRequest{}
	if err := decodeJSON(w, r, maxJSONBody, body); err != nil {
		return err
	}
	if err := body.Validate(); err != nil {
		return err
	}
	var res wire.GitRemoteResult
	if err := t.Call(r.Context(), wire.OpGitClone, body, &res, gitRemoteCall()); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, &res)
	return nil
}

// handleGitRemote serves POST {target}/git/fetch, /pull and /push: 200
// {"summary"}; a missing credential is 401 git_credentials, a rejected
// push 409 push_rejected, a conflicted pull 409 merge_conflict.
func (s *Server) handleGitRemote(op string) func(http.ResponseWriter, *http.Request, target) error {
	return func(w http.ResponseWriter, r *http.Request, t target) error {
		body := &wire.GitRemoteRequest{}
		if err := decodeJSON(w, r, maxJSONBody, body); err != nil {
			return err
		}
		if err := body.Validate(); err != nil {
			return err
		}
		var res wire.GitRemoteResult
		if err := t.Call(r.Context(), op, body, &res, gitRemoteCall()); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, &res)
		return nil
	}
}

// handleGitStage serves POST {target}/git/add and /git/reset: 200 with the
// repository's status after.
func (s *Server) handleGitStage(op string) func(http.ResponseWriter, *http.Request, target) error {
	return func(w http.ResponseWriter, r *http.Request, t target) error {
		body := &wire.GitStageRequest{}
		if err := decodeJSON(w, r, maxJSONBody, body); err != nil {
			return err
		}
		if err := body.Validate(); err != nil {
			return err
		}
		var st wire.GitStatus
		if err := t.Call(r.Context(), op, body, &st, fileCall()); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, &st)
		return nil
	}
}

// handleGitBranches serves GET {target}/git/branches?path=.
func (s *Server) handleGitBranches(w http.ResponseWriter, r *http.Request, t target) error {
	body := &wire.GitBranchesRequest{Path: r.URL.Query().Get("path")}
	if err := body.Validate(); err != nil {
		return err
	}
	var res wire.GitBranches
	if err := t.Call(r.Context(), wire.OpGitBranches, body, &res, fileCall()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, &res)
	return nil
}

// handleGitBranchCreate serves POST {target}/git/branches: 201 the branch;
// a name in use is 409.
func (s *Server) handleGitBranchCreate(w http.ResponseWriter, r *http.Request, t target) error {
	body := &wire.GitBranchCreateRequest{}
	if err := decodeJSON(w, r, maxJSONBody, body); err != nil {
		return err
	}
	if err := body.Validate(); err != nil {
		return err
	}
	var res wire.GitBranchRef
	if err := t.Call(r.Context(), wire.OpGitBranchCreate, body, &res, fileCall()); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, &res)
	return nil
}

// handleGitBranchDelete serves DELETE {target}/git/branches/{name}?path=&force=:
// 204; not merged without force is 409 not_merged.
func (s *Server) handleGitBranchDelete(w http.ResponseWriter, r *http.Request, t target) error {
	q := r.URL.Query()
	force, err := boolParam(q, "force", false)
	if err != nil {
		return err
	}
	body := &wire.GitBranchDeleteRequest{Path: q.Get("path"), Name: r.PathValue("name"), Force: force}
	if err := body.Validate(); err != nil {
		return err
	}
	if err := t.Call(r.Context(), wire.OpGitBranchDelete, body, nil, fileCall()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// handleGitCheckout serves POST {target}/git/checkout: 200 with the status
// after; local changes in the way are 409 local_changes.
func (s *Server) handleGitCheckout(w http.ResponseWriter, r *http.Request, t target) error {
	body := &wire.GitCheckoutRequest{}
	if err := decodeJSON(w, r, maxJSONBody, body); err != nil {
		return err
	}
	if err := body.Validate(); err != nil {
		return err
	}
	var st wire.GitStatus
	if err := t.Call(r.Context(), wire.OpGitCheckout, body, &st, fileCall()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, &st)
	return nil
}
