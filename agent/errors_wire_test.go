package agent_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// TestFileAndGitErrorsOnTheWire runs file and git ops that fail, through a
// real agent over NATS, and checks the code and reason each answers: the
// domain errors of agent/files and agent/git reach the wire as PROTOCOL.md
// says.
func TestFileAndGitErrorsOnTheWire(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is required: %v", err)
	}
	w := newWorld(t)
	for name, content := range map[string]string{"a.txt": "a", "full/b.txt": "b", "plain/c.txt": "c"} {
		p := filepath.Join(w.root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "init", "-q", filepath.Join(w.root, "repo")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	r := w.start(t, agent.Config{})
	w.waitOnline(t, r.a.Instance())

	var up wire.FsUploadBeginResult
	if err := w.calls.Call(tctx(t), laptop, wire.OpFsUploadBegin, &wire.FsUploadBeginRequest{FsWriteOptions: wire.FsWriteOptions{Path: "up.txt"}}, &up, rpc.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		op      string
		body    any
		code    wire.Code
		reason  string
		message string // in the error's message
	}{
		{"outside the root", wire.OpFsStat, &wire.FsPathRequest{Path: "../x"}, wire.CodePermissionDenied, wire.ReasonOutsideRoot, "outside the root"},
		{"missing", wire.OpFsStat, &wire.FsPathRequest{Path: "nope"}, wire.CodeNotFound, "", "stat nope"},
		{"not empty", wire.OpFsRemove, &wire.FsRemoveRequest{Path: "full"}, wire.CodeConflict, wire.ReasonNotEmpty, "not empty"},
		{"remove the root", wire.OpFsRemove, &wire.FsRemoveRequest{Path: "/"}, wire.CodeInvalidArgument, "", "root"},
		{"write over a file", wire.OpFsWrite, &wire.FsWriteRequest{FsWriteOptions: wire.FsWriteOptions{Path: "a.txt"}, Data: []byte("x")},
			wire.CodeConflict, wire.ReasonAlreadyExists, "already exists"},
		{"mkdir over a file", wire.OpFsMkdir, &wire.FsMkdirRequest{Path: "a.txt"}, wire.CodeConflict, wire.ReasonAlreadyExists, "a file exists"},
		{"checksum", wire.OpFsUploadCommit, &wire.FsUploadCommitRequest{Handle: up.Handle, Size: 5}, wire.CodeInvalidArgument, wire.ReasonChecksumMismatch, "received 0 bytes"},
		{"not a repository", wire.OpGitDiff, &wire.GitDiffRequest{Path: "plain"}, wire.CodeNotFound, "", "not in a git work tree"},
		{"git dir outside the root", wire.OpGitStatus, &wire.GitStatusRequest{Path: "../x"}, wire.CodePermissionDenied, wire.ReasonOutsideRoot, "outside the root"},
		{"unknown revision", wire.OpGitLog, &wire.GitLogRequest{Path: "repo", Ref: "nope"}, wire.CodeNotFound, "", "unknown revision"},
		{"ref like an option", wire.OpGitLog, &wire.GitLogRequest{Path: "repo", Ref: "-p"}, wire.CodeInvalidArgument, "", "starts with '-'"},
		{"patch does not apply", wire.OpGitApply, &wire.GitApplyRequest{Path: "repo", Patch: []byte("not a patch\n")}, wire.CodeConflict, "", "git apply"},
		{"nothing to commit", wire.OpGitCommit, &wire.GitCommitRequest{Path: "repo", Message: "m"}, wire.CodeConflict, "", "nothing to commit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := w.calls.Call(tctx(t), laptop, tc.op, tc.body, nil, rpc.CallOptions{})
			we := wire.AsError(err)
			if we == nil || we.Code != tc.code || we.Reason != tc.reason || !strings.Contains(we.Message, tc.message) {
				t.Fatalf("%s = %v, want %s/%s with %q", tc.op, err, tc.code, tc.reason, tc.message)
			}
			if strings.Contains(we.Message, w.root) {
				t.Errorf("message %q names the root's host path", we.Message)
			}
		})
	}
}

// TestNoGitIsUnsupported: on a machine without git every git op is 501
// unsupported/executable_not_found (API.md).
func TestNoGitIsUnsupported(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no git to find
	w := newWorld(t)
	r := w.start(t, agent.Config{})
	w.waitOnline(t, r.a.Instance())
	err := w.calls.Call(tctx(t), laptop, wire.OpGitStatus, &wire.GitStatusRequest{}, nil, rpc.CallOptions{})
	if we := wire.AsError(err); we == nil || we.Code != wire.CodeUnsupported || we.Reason != wire.ReasonExecutableNotFound || we.HTTPStatus() != 501 {
		t.Fatalf("git.status without git = %v, want unsupported/executable_not_found", err)
	}
}
