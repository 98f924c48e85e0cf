//go:build linux || darwin

package proc

import (
	"os/exec"
	"runtime"
	"sync"
)

// inheritedMask reports whether the agent was started with signals
// blocked (the mask every thread it starts inherits, and with it every
// child: Go restores it in the child after fork); and the agent's binary
// to start the shim with.
var inheritedMask = sync.OnceValues(func() (bool, string) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	blocked, err := threadMaskBlocked()
	if err != nil || !blocked {
		return false, ""
	}
	self, err := selfBinary()
	if err != nil {
		return false, ""
	}
	return true, self
})

// unblockChildSignals makes cmd start with an empty signal mask when the
// agent inherited a non-empty one: it then runs through the agent's own
// binary as a shim (one more exec), since Go gives a child its parent's
// startup mask and offers no way to clear it between fork and exec.
func unblockChildSignals(cmd *exec.Cmd) {
	blocked, self := inheritedMask()
	if !blocked {
		return
	}
	throughShim(cmd, self, sigResetEnv, "1")
}
