package files

import "errors"

// Watch ops, as in the API.
const (
	WatchCreate = "create"
	WatchWrite  = "write"
	WatchRemove = "remove"
	WatchRename = "rename"
)

// WatchEvent is one change under a watched directory: Path relative to the
// root. A rename gives WatchRename for the old name and WatchCreate for
// the new one. Overflow (with no path) says the kernel dropped events.
type WatchEvent struct {
	Path     string
	Op       string
	Overflow bool
}

// ErrWatchUnsupported: this platform has no watch (see WatchSupported).
var ErrWatchUnsupported = errors.New("file watching is not supported on this platform")
