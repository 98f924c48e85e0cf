package agent

import (
	"context"
	"errors"
	iofs "io/fs"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/agent/git"
	"github.com/outposthq/outpost/agent/policy"
	"github.com/outposthq/outpost/wire"
)

// wireErrors map the domain errors of agent/files and agent/git, and the io/fs
// and context kinds they reuse, to wire errors. This is the one place where
// those packages' errors meet the wire (as coder's agentproc maps its
// sentinels in one place); handle applies it to every reply. The first row
// whose kind err is wins: each package's own kinds come before the generic
// ones. agent/proc still returns wire errors; they pass through.
var wireErrors = []struct {
	kind   error
	code   wire.Code
	reason string
}{
	{kind: files.ErrDenied, code: wire.CodePermissionDenied, reason: wire.ReasonPolicy},
	{kind: files.ErrOutsideRoot, code: wire.CodePermissionDenied, reason: wire.ReasonOutsideRoot},
	{kind: files.ErrNotEmpty, code: wire.CodeConflict, reason: wire.ReasonNotEmpty},
	{kind: files.ErrDiskFull, code: wire.CodeInsufficientStorage},
	{kind: files.ErrTooManyEntries, code: wire.CodePayloadTooLarge},
	{kind: files.ErrChecksumMismatch, code: wire.CodeInvalidArgument, reason: wire.ReasonChecksumMismatch},
	{kind: files.ErrUploadDone, code: wire.CodeConflict},
	{kind: files.ErrUnsafeEntry, code: wire.CodePermissionDenied, reason: wire.ReasonUnsafeArchiveEntry},
	{kind: files.ErrArchiveTooLarge, code: wire.CodePayloadTooLarge, reason: wire.ReasonArchiveTooLarge},
	{kind: files.ErrWatchUnsupported, code: wire.CodeUnsupported},
	{kind: files.ErrSourceChanged, code: wire.CodeConflict, reason: wire.ReasonSourceChanged},
	{kind: files.ErrUnsupportedEntry, code: wire.CodeInvalidArgument, reason: wire.ReasonUnsupportedArchiveEntry},

	{kind: git.ErrNoGit, code: wire.CodeUnsupported, reason: wire.ReasonExecutableNotFound},
	{kind: git.ErrNotRepository, code: wire.CodeNotFound},
	{kind: git.ErrUnknownRevision, code: wire.CodeNotFound},
	{kind: git.ErrPatchFailed, code: wire.CodeConflict},
	{kind: git.ErrNothingToCommit, code: wire.CodeConflict},
	{kind: git.ErrUnmerged, code: wire.CodeConflict},
	{kind: git.ErrCommitRefused, code: wire.CodeConflict},
	{kind: git.ErrOutputTooLarge, code: wire.CodePayloadTooLarge},
	{kind: git.ErrNotMerged, code: wire.CodeConflict, reason: wire.ReasonNotMerged},
	{kind: git.ErrBranchInUse, code: wire.CodeConflict},
	{kind: git.ErrLocalChanges, code: wire.CodeConflict, reason: wire.ReasonLocalChanges},
	{kind: git.ErrOutsideRoot, code: wire.CodePermissionDenied, reason: wire.ReasonOutsideRoot},
	{kind: git.ErrCredentials, code: wire.CodeUnauthenticated, reason: wire.ReasonGitCredentials},
	{kind: git.ErrPushRejected, code: wire.CodeConflict, reason: wire.ReasonPushRejected},
	{kind: git.ErrMergeConflict, code: wire.CodeConflict, reason: wire.ReasonMergeConflict},
	{kind: git.ErrRemoteNotFound, code: wire.CodeNotFound},
	{kind: git.ErrUnreachable, code: wire.CodeUnavailable, reason: wire.ReasonRemoteUnreachable},

	{kind: iofs.ErrNotExist, code: wire.CodeNotFound},
	{kind: iofs.ErrExist, code: wire.CodeConflict, reason: wire.ReasonAlreadyExists},
	{kind: iofs.ErrPermission, code: wire.CodePermissionDenied},
	{kind: iofs.ErrInvalid, code: wire.CodeInvalidArgument},
	{kind: iofs.ErrClosed, code: wire.CodeUnavailable},
	{kind: context.DeadlineExceeded, code: wire.CodeDeadlineExceeded},
	{kind: context.Canceled, code: wire.CodeUnavailable},
}

// wireError is err as a *wire.Error with err's message: err itself when it
// is (or wraps) one, else by the first row of wireErrors it matches, else
// internal.
func wireError(err error) *wire.Error {
	var we *wire.Error
	if err == nil || errors.As(err, &we) {
		return wire.AsError(err)
	}
	if errors.Is(err, files.ErrDenied) { // a walk met a denied path: name the rule
		err = &policy.Denial{Rule: "denyPaths", Detail: err.Error()}
	}
	var denial *policy.Denial
	if errors.As(err, &denial) {
		return wire.Errorf(wire.CodePermissionDenied, wire.ReasonPolicy, "%s", err.Error())
	}
	for _, m := range wireErrors {
		if errors.Is(err, m.kind) {
			return wire.Errorf(m.code, m.reason, "%s", err.Error())
		}
	}
	return wire.AsError(err)
}
