//go:build !linux

package files

import "context"

// WatchSupported is false: only Linux (inotify) watches today; darwin and
// windows report the capability as absent rather than poll.
const WatchSupported = false

// Watch reports ErrWatchUnsupported.
func (f *FS) Watch(ctx context.Context, p string, recursive bool, ready func(), emit func(WatchEvent)) error {
	return errorf(ErrWatchUnsupported, "watch %s: not supported on this platform", p)
}
