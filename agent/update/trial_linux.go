package update

import (
	"os/exec"
	"runtime"
	"syscall"
)

// dieWithParent makes the trial process get SIGKILL when the agent that
// starts it dies: killed mid-trial, the old agent must not leave the new
// one serving beside whatever its service manager starts next. The kernel
// sends the signal when the thread that forked the child ends, so the
// calling goroutine stays on its thread until release, which the caller
// calls once it has waited for the trial. started is called after
// cmd.Start.
func dieWithParent(cmd *exec.Cmd) (started func() error, release func(), err error) {
	runtime.LockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return func() error { return nil }, runtime.UnlockOSThread, nil
}
