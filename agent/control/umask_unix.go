//go:build unix

package control

import "syscall"

// umask sets the process's umask, so the socket is never made wider than
// owner-only, not even between bind and chmod.
func umask(m int) int { return syscall.Umask(m) }
