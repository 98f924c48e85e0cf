//go:build !linux

package proc

import "os/exec"

// unblockChildSignals does nothing here: only the Linux agent clears an
// inherited signal mask for its children (see sigmask_linux.go).
func unblockChildSignals(*exec.Cmd) {}

// clearSignalMask: never asked for here (unblockChildSignals does nothing).
func clearSignalMask() error { return nil }
