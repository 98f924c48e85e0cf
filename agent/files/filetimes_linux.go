//go:build linux

package files

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setTimes sets the access and modification times of open file f to mt
// through its descriptor (utimensat with no path, as futimens does) and
// reports whether it did; when not, the caller sets them by name. By
// name, in an os.Root, it is two calls (a readlinkat, then utimensat):
// a restore times every file it writes.
func setTimes(f *os.File, mt time.Time) bool {
	ts := [2]unix.Timespec{unix.NsecToTimespec(mt.UnixNano()), unix.NsecToTimespec(mt.UnixNano())}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall6(unix.SYS_UTIMENSAT, fd, 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	}); err != nil {
		return false
	}
	return errno == 0
}
