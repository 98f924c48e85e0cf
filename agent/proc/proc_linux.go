package proc

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// setDeathSignal makes the kernel SIGKILL the child when the agent dies.
// (Strictly, when the thread that started it exits; Go only ends threads of
// goroutines that exit while locked to them, which this package never does.)
func setDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}

// waitNoReap blocks until p has exited but leaves it a zombie, so its pid,
// which is also its process group id, cannot be reused until cmd.Wait reaps
// it. That makes signalling the group after the leader's exit safe. It
// reports false when it could not wait this way.
func waitNoReap(p *os.Process) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return err == nil
		}
	}
}
