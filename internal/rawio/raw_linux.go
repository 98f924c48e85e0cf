//go:build linux && !race

package rawio

import (
	"syscall"
	"unsafe"
)

// Read reads from fd, which must be non-blocking (EAGAIN when empty).
func Read(fd uintptr, p []byte) (int, error) {
	if len(p) == 0 || len(p) > Max {
		return syscall.Read(int(fd), p)
	}
	return raw(syscall.SYS_READ, fd, p)
}

// Write writes to fd, which must be non-blocking (EAGAIN when full).
func Write(fd uintptr, p []byte) (int, error) {
	if len(p) == 0 || len(p) > Max {
		return syscall.Write(int(fd), p)
	}
	return raw(syscall.SYS_WRITE, fd, p)
}

// raw makes system call trap (read or write) of p on fd directly, again
// when a signal interrupted it.
func raw(trap, fd uintptr, p []byte) (int, error) {
	for {
		n, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(n), nil
	}
}
