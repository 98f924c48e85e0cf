package main

import (
	"os/exec"
	"syscall"
)

// setParentDeath makes the kernel kill cmd when the bench dies, so that an
// interrupted run leaves no fleet behind.
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
