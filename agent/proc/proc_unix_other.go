//go:build unix && !linux

package proc

import (
	"os"
	"syscall"
)

// setDeathSignal does nothing: only Linux has a parent-death signal.
func setDeathSignal(*syscall.SysProcAttr) {}

// waitNoReap is unsupported here; the caller reaps with cmd.Wait instead.
func waitNoReap(*os.Process) bool { return false }
