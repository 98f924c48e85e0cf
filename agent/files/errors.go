package files

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"sync"
	"syscall"
)

// The kinds of error this package returns beyond io/fs's. Every error from
// an FS or Upload method wraps exactly one kind, so callers classify it with
// errors.Is: one of these, or io/fs's ErrNotExist, ErrExist, ErrPermission,
// ErrInvalid or ErrClosed; an error of no kind is a failure nobody asked
// for (the OS failing, a reader failing). The agent maps the kinds to wire
// errors in one place, at its dispatch.
var (
	// ErrOutsideRoot: the path leaves the root lexically (".."), through a
	// symbolic link, by naming a volume or device, or holds a NUL byte.
	// Nothing outside the root was read or written.
	ErrOutsideRoot = errors.New("outside the root")
	// ErrNotEmpty: a directory to remove without recursive has entries.
	ErrNotEmpty = errors.New("directory not empty")
	// ErrDiskFull: the disk or a quota is full (ENOSPC, EDQUOT, Windows'
	// disk-full errors); the write left nothing behind.
	ErrDiskFull = errors.New("disk full")
	// ErrTooManyEntries: a listing holds more entries than its limit.
	ErrTooManyEntries = errors.New("too many entries")
	// ErrChecksumMismatch: what an upload wrote is not the size or SHA-256
	// its sender gave; the upload was discarded.
	ErrChecksumMismatch = errors.New("checksum mismatch")
	// ErrUploadDone: a write or commit to an upload that was already
	// committed or aborted.
	ErrUploadDone = errors.New("upload already finished")
	// ErrDenied: the path is one the machine owner's policy denies (see
	// FS.SetHidden); nothing was written there.
	ErrDenied = errors.New("denied by policy")
)

// kindError is an error of one kind with its message. errors.Is sees the
// kind and never the OS error behind it: syscall counts ENOTEMPTY as
// ErrExist too, and to callers a non-empty directory is ErrNotEmpty only.
type kindError struct {
	kind error // nil: a failure of no kind
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// errorf makes an error of kind with a formatted message.
func errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// escapeErr is the error os.Root reports when a name escapes the root. The os
// package does not export it, so learnEscapeErr captures the value from a probe
// that is certain to escape; classify compares by identity, never by string.
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

// mapErr turns an OS error from operation op on path p into an error of its
// kind. The message names the op, the root-relative path and the OS's
// reason; it never includes the root's location on the host. An error that
// has its kind already is returned as it is.
func mapErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	var ke *kindError
	if errors.As(err, &ke) {
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
	return errorf(classify(err), "%s %s: %v", op, p, cause)
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

// classify picks the kind of an OS error; nil when it has none.
func classify(err error) error {
	switch {
	case isEscape(err):
		return ErrOutsideRoot
	case errors.Is(err, iofs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return iofs.ErrNotExist
	case errors.Is(err, syscall.ENOTEMPTY):
		return ErrNotEmpty
	case errors.Is(err, iofs.ErrExist):
		return iofs.ErrExist
	case errors.Is(err, iofs.ErrPermission):
		return iofs.ErrPermission
	case errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EINVAL):
		return iofs.ErrInvalid
	case errors.Is(err, iofs.ErrClosed):
		return iofs.ErrClosed
	case isDiskFull(err):
		return ErrDiskFull
	default:
		return nil
	}
}
