//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize delivers the local terminal's size changes (SIGWINCH) to ch.
func notifyResize(ch chan<- os.Signal) { signal.Notify(ch, syscall.SIGWINCH) }
