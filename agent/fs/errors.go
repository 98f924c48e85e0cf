package fs

import (
	"errors"
	iofs "io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/outposthq/outpost/wire"
)

// escapeErr is the error os.Root reports when a name escapes the root. The os
// package does not export it, so learnEscapeErr captures the value from a probe
// that is certain to escape; mapErr compares by identity, never by string.
var (
	escapeOnce sync.Once
	escapeErr  error
)

// learnEscapeErr records os.Root's escape error using r. Lstat("..") is refused
// before any system call touches the parent.
func learnEscapeErr(r *os.Root) {
	escapeOnce.Do(func() {
		_, err := r.Lstat("..")
		var pe *iofs.PathError
		if errors.As(err, &pe) {
			escapeErr = pe.Err
		}
	})
}

// isEscape reports whether err is os.Root refusing a path outside the root.
func isEscape(err error) bool {
	return escapeErr != nil && errors.Is(err, escapeErr)
}

// mapErr turns an error from an operation op on path p into a *wire.Error. The
// message names the op, the root-relative path and the OS's reason; it never
// includes the root's location on the host.
func mapErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	var we *wire.Error
	if errors.As(err, &we) {
		return err
	}
	cause := err
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		cause = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		cause = le.Err
	}
	code, reason := classify(err)
	return wire.Errorf(code, reason, "%s %s: %v", op, p, cause)
}

// isDiskFull reports whether err says the disk or a quota is full.
func isDiskFull(err error) bool {
	for _, e := range diskFullErrnos {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// classify picks the wire code and reason for an OS error.
func classify(err error) (wire.Code, string) {
	switch {
	case isEscape(err):
		return wire.CodePermissionDenied, wire.ReasonOutsideRoot
	case errors.Is(err, iofs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return wire.CodeNotFound, ""
	case errors.Is(err, syscall.ENOTEMPTY):
		return wire.CodeConflict, wire.ReasonNotEmpty
	case errors.Is(err, iofs.ErrExist):
		return wire.CodeConflict, wire.ReasonAlreadyExists
	case errors.Is(err, iofs.ErrPermission):
		return wire.CodePermissionDenied, ""
	case errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EINVAL):
		return wire.CodeInvalidArgument, ""
	case errors.Is(err, iofs.ErrClosed), errors.Is(err, os.ErrClosed):
		return wire.CodeUnavailable, ""
	case isDiskFull(err):
		return wire.CodeInsufficientStorage, ""
	default:
		return wire.CodeInternal, ""
	}
}
