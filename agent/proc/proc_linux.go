package proc

import (
	"errors"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setDeathSignal makes the kernel SIGKILL the child when the agent dies.
// (Strictly, when the thread that started it exits; Go only ends threads of
// goroutines that exit while locked to them, which this package never does.)
func setDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}

// si_code values of a SIGCHLD siginfo (the same on every Linux arch).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// waitExit blocks until the leader p exits and returns its exit code (as
// exitCode computes it), but leaves it a zombie: its pid, which is also its
// group's id, cannot be reused until cmd.Wait reaps it, so killing the group
// after the leader's exit is safe. ok is false when it could not wait this
// way; the caller then reaps with cmd.Wait.
func waitExit(p *os.Process) (code int, ok bool) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EINTR) {
			return 0, false
		}
	}
	pid, status := sigchld(&info)
	if int(pid) != p.Pid { // not the layout sigchld expects
		return 0, false
	}
	switch info.Code {
	case cldExited:
		return int(status), true
	case cldKilled, cldDumped:
		return 128 + int(status), true
	}
	return 0, false
}

// sigchld reads si_pid and si_status of a SIGCHLD siginfo. unix.Siginfo
// leaves the union opaque; it follows signo, errno and code, aligned to a
// pointer, and starts with pid, uid and status.
func sigchld(info *unix.Siginfo) (pid, status int32) {
	const ptr = unsafe.Sizeof(uintptr(0))
	const union = (3*4 + ptr - 1) &^ (ptr - 1)
	base := unsafe.Pointer(info)
	return *(*int32)(unsafe.Add(base, union)), *(*int32)(unsafe.Add(base, union+8))
}
