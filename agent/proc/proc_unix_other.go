//go:build unix && !linux

package proc

import (
	"os"
	"syscall"
)

// setDeathSignal does nothing: only Linux has a parent-death signal.
func setDeathSignal(*syscall.SysProcAttr) {}

// waitExit is unsupported here: the caller reaps the leader with cmd.Wait
// as soon as it exits.
func waitExit(*os.Process) (code int, ok bool) { return 0, false }
