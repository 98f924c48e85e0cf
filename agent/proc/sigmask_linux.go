package proc

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// sigResetEnv marks a start through the signal-mask shim (see
// unblockChildSignals): the agent's own binary, which clears its signal
// mask and execs the command. Its OUTPOST_ prefix keeps it from ever being
// inherited by commands otherwise.
const sigResetEnv = ScrubbedPrefix + "PROC_UNBLOCK_SIGNALS"

func init() {
	if os.Getenv(sigResetEnv) == "1" && len(os.Args) >= 3 {
		runUnblockShim(os.Args[1], os.Args[2:])
	}
}

// runUnblockShim clears the signal mask of this thread and execs path
// with argv, leaving the marker out of its environment; it never returns.
func runUnblockShim(path string, argv []string) {
	runtime.LockOSThread()
	var empty unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &empty, nil); err != nil {
		fmt.Fprintf(os.Stderr, "outpost: unblock signals: %v\n", err)
		os.Exit(127)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, sigResetEnv+"=") })
	err := syscall.Exec(path, argv, env)
	fmt.Fprintf(os.Stderr, "outpost: exec %s: %v\n", path, err)
	os.Exit(127)
}

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
	self, err := os.Executable()
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
	cmd.Args = append([]string{self, cmd.Path}, cmd.Args...)
	cmd.Path = self
	cmd.Env = append(cmd.Env, sigResetEnv+"=1")
}
