package agent

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	iofs "io/fs"
	"strings"
	"testing"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/agent/git"
	"github.com/outposthq/outpost/agent/policy"
	"github.com/outposthq/outpost/wire"
)

func TestWireError(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		code   wire.Code
		reason string
	}{
		{"outside root", files.ErrOutsideRoot, wire.CodePermissionDenied, wire.ReasonOutsideRoot},
		{"not empty", files.ErrNotEmpty, wire.CodeConflict, wire.ReasonNotEmpty},
		{"denied by the owner's policy", files.ErrDenied, wire.CodePermissionDenied, wire.ReasonPolicy},
		{"a policy denial", &policy.Denial{Rule: "exec", Detail: "off"}, wire.CodePermissionDenied, wire.ReasonPolicy},
		{"disk full", files.ErrDiskFull, wire.CodeInsufficientStorage, ""},
		{"too many entries", files.ErrTooManyEntries, wire.CodePayloadTooLarge, ""},
		{"checksum", files.ErrChecksumMismatch, wire.CodeInvalidArgument, wire.ReasonChecksumMismatch},
		{"upload done", files.ErrUploadDone, wire.CodeConflict, ""},
		{"no git", git.ErrNoGit, wire.CodeUnsupported, wire.ReasonExecutableNotFound},
		{"not a repository", git.ErrNotRepository, wire.CodeNotFound, ""},
		{"unknown revision", git.ErrUnknownRevision, wire.CodeNotFound, ""},
		{"patch failed", git.ErrPatchFailed, wire.CodeConflict, ""},
		{"nothing to commit", git.ErrNothingToCommit, wire.CodeConflict, ""},
		{"unmerged", git.ErrUnmerged, wire.CodeConflict, ""},
		{"commit refused", git.ErrCommitRefused, wire.CodeConflict, ""},
		{"git output", git.ErrOutputTooLarge, wire.CodePayloadTooLarge, ""},
		{"not merged", git.ErrNotMerged, wire.CodeConflict, wire.ReasonNotMerged},
		{"branch in use", git.ErrBranchInUse, wire.CodeConflict, ""},
		{"local changes", git.ErrLocalChanges, wire.CodeConflict, wire.ReasonLocalChanges},
		{"git outside root", git.ErrOutsideRoot, wire.CodePermissionDenied, wire.ReasonOutsideRoot},
		{"credentials", git.ErrCredentials, wire.CodeUnauthenticated, wire.ReasonGitCredentials},
		{"push rejected", git.ErrPushRejected, wire.CodeConflict, wire.ReasonPushRejected},
		{"merge conflict", git.ErrMergeConflict, wire.CodeConflict, wire.ReasonMergeConflict},
		{"remote not found", git.ErrRemoteNotFound, wire.CodeNotFound, ""},
		{"unreachable", git.ErrUnreachable, wire.CodeUnavailable, wire.ReasonRemoteUnreachable},
		{"not exist", iofs.ErrNotExist, wire.CodeNotFound, ""},
		{"exist", iofs.ErrExist, wire.CodeConflict, wire.ReasonAlreadyExists},
		{"permission", iofs.ErrPermission, wire.CodePermissionDenied, ""},
		{"invalid", iofs.ErrInvalid, wire.CodeInvalidArgument, ""},
		{"closed", iofs.ErrClosed, wire.CodeUnavailable, ""},
		{"deadline", context.DeadlineExceeded, wire.CodeDeadlineExceeded, ""},
		{"canceled", context.Canceled, wire.CodeUnavailable, ""},
		{"no kind", errors.New("boom"), wire.CodeInternal, ""},
		{"a wire error", wire.Errorf(wire.CodeConflict, wire.ReasonNotRunning, "process p is not running"), wire.CodeConflict, wire.ReasonNotRunning},
		{"a wire error beside a kind", errors.Join(iofs.ErrNotExist, wire.Errorf(wire.CodeConflict, wire.ReasonFenced, "f")), wire.CodeConflict, wire.ReasonFenced},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := fmt.Errorf("op path: %w", tc.err)
			got := wireError(err)
			if got.Code != tc.code || got.Reason != tc.reason {
				t.Fatalf("wireError(%v) = %s/%s, want %s/%s", err, got.Code, got.Reason, tc.code, tc.reason)
			}
			if !strings.Contains(got.Message, "op path: ") {
				t.Errorf("message %q lost the error's own", got.Message)
			}
			if got.Retryable != (tc.code == wire.CodeUnavailable) {
				t.Errorf("retryable %v for %s", got.Retryable, tc.code)
			}
		})
	}
	if got := wireError(nil); got != nil {
		t.Errorf("wireError(nil) = %v", got)
	}
}

// TestEveryDomainErrorIsMapped parses agent/files's and agent/git's errors.go:
// each exported Err* there must be a row of wireErrors, so a new kind
// cannot reach the wire as internal by accident.
func TestEveryDomainErrorIsMapped(t *testing.T) {
	known := map[string]error{
		"files.ErrOutsideRoot": files.ErrOutsideRoot, "files.ErrDenied": files.ErrDenied, "files.ErrNotEmpty": files.ErrNotEmpty, "files.ErrDiskFull": files.ErrDiskFull,
		"files.ErrTooManyEntries": files.ErrTooManyEntries, "files.ErrChecksumMismatch": files.ErrChecksumMismatch,
		"files.ErrUploadDone": files.ErrUploadDone,
		"git.ErrNoGit":        git.ErrNoGit, "git.ErrNotRepository": git.ErrNotRepository,
		"git.ErrUnknownRevision": git.ErrUnknownRevision, "git.ErrPatchFailed": git.ErrPatchFailed,
		"git.ErrNothingToCommit": git.ErrNothingToCommit, "git.ErrUnmerged": git.ErrUnmerged,
		"git.ErrCommitRefused": git.ErrCommitRefused, "git.ErrOutputTooLarge": git.ErrOutputTooLarge,
		"git.ErrNotMerged": git.ErrNotMerged, "git.ErrBranchInUse": git.ErrBranchInUse,
		"git.ErrLocalChanges": git.ErrLocalChanges, "git.ErrOutsideRoot": git.ErrOutsideRoot,
		"git.ErrCredentials": git.ErrCredentials, "git.ErrPushRejected": git.ErrPushRejected,
		"git.ErrMergeConflict": git.ErrMergeConflict, "git.ErrRemoteNotFound": git.ErrRemoteNotFound,
		"git.ErrUnreachable": git.ErrUnreachable,
	}
	found := 0
	for _, pkg := range []string{"files", "git"} {
		f, err := parser.ParseFile(token.NewFileSet(), pkg+"/errors.go", nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					if !n.IsExported() || !strings.HasPrefix(n.Name, "Err") {
						continue
					}
					found++
					name := pkg + "." + n.Name
					kind, ok := known[name]
					if !ok {
						t.Errorf("%s is new: map it in wireErrors (agent/errors.go) and list it here", name)
						continue
					}
					if !mapped(kind) {
						t.Errorf("%s is no row of wireErrors", name)
					}
				}
			}
		}
	}
	if found != len(known) {
		t.Errorf("found %d errors in fs/errors.go and git/errors.go, the test knows %d", found, len(known))
	}
}

func mapped(kind error) bool {
	for _, m := range wireErrors {
		if m.kind == kind {
			return true
		}
	}
	return false
}
