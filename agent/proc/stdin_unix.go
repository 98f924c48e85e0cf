//go:build unix

package proc

import (
	"os"

	"github.com/outposthq/outpost/internal/rawio"
	"golang.org/x/sys/unix"
)

// writeNow returns a write to f that never blocks (ok false: it would
// have, or failed; nothing was written), or nil when f is in blocking
// mode: a PTY master on Go's poller, a pipe from os.Pipe.
func writeNow(f *os.File) func([]byte) (int, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nonblock := false
	if rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblock = err == nil && fl&unix.O_NONBLOCK != 0
	}) != nil || !nonblock {
		return nil
	}
	return func(p []byte) (int, bool) {
		n, werr := 0, error(nil)
		if err := rc.Write(func(fd uintptr) bool {
			n, werr = rawio.Write(fd, p)
			return true // never wait: the queue does
		}); err != nil || werr != nil || n <= 0 {
			return 0, false
		}
		return n, true
	}
}
