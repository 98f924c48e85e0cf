//go:build !linux && !darwin

package proc

import "os/exec"

// unblockChildSignals does nothing here: only the Linux and darwin agents
// clear an inherited signal mask for their children (sigmask_unix.go).
func unblockChildSignals(*exec.Cmd) {}

// clearSignalMask: never asked for here (unblockChildSignals does nothing).
func clearSignalMask() error { return nil }
