package proc

import (
	"os/exec"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// inheritedMask reports whether the agent was started with signals
// blocked (the mask every thread it starts inherits, and with it every
// child: Go restores it in the child after fork); and the agent's binary
// to start the shim with.
var inheritedMask = sync.OnceValues(func() (bool, string) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cur unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, nil, &cur); err != nil {
		return false, ""
	}
	blocked := false
	for _, w := range cur.Val {
		blocked = blocked || w != 0
	}
	if !blocked {
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

// clearSignalMask empties this thread's signal mask (the shim's
// sigResetEnv).
func clearSignalMask() error {
	var empty unix.Sigset_t
	return unix.PthreadSigmask(unix.SIG_SETMASK, &empty, nil)
}
