//go:build !windows

package main

import (
	"os"
	"syscall"
)

// restartSelf replaces this process with exe and the same arguments, so a
// service manager sees the same process go on.
func restartSelf(exe string) error {
	return syscall.Exec(exe, append([]string{exe}, os.Args[1:]...), os.Environ())
}
