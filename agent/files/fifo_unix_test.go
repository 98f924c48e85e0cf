//go:build unix

package files

import "golang.org/x/sys/unix"

// mkfifo makes a named pipe.
func mkfifo(name string) error { return unix.Mkfifo(name, 0o644) }
