//go:build unix && !linux

package rawio

import "syscall"

// Read reads from fd, which must be non-blocking (EAGAIN when empty).
func Read(fd uintptr, p []byte) (int, error) { return syscall.Read(int(fd), p) }

// Write writes to fd, which must be non-blocking (EAGAIN when full).
func Write(fd uintptr, p []byte) (int, error) { return syscall.Write(int(fd), p) }
