//go:build linux && race

package rawio

import "syscall"

// Under the race detector, Read and Write are syscall's: those tell the
// detector that a write to a descriptor happens before the read that
// returns its bytes (and what a read filled), which a direct call does
// not, and code that passes data through a pipe or socket would be
// reported racing. Non-blocking descriptors all the same.

// Read reads from fd, which must be non-blocking (EAGAIN when empty).
func Read(fd uintptr, p []byte) (int, error) {
	for {
		n, err := syscall.Read(int(fd), p)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// Write writes to fd, which must be non-blocking (EAGAIN when full).
func Write(fd uintptr, p []byte) (int, error) {
	for {
		n, err := syscall.Write(int(fd), p)
		if err != syscall.EINTR {
			return n, err
		}
	}
}
