//go:build unix

package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
)

// pathSeparators are the characters that make an executable name a path.
const pathSeparators = "/"

// sysProcAttr puts the child in a new process group whose id is its pid, so
// the whole group can be signalled as -pid.
func sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(attr)
	return attr
}

// setShell makes cmd run command with /bin/sh -c.
func setShell(cmd *exec.Cmd, command string) {
	cmd.Path = "/bin/sh"
	cmd.Args = []string{"sh", "-c", command}
}

// group is what a kill reaches: the process group whose id is the leader's
// pid (a PTY process's session has the same id). Signalling it is safe
// while the leader is unreaped, which reserves the id.
type group struct{ leader *os.Process }

// newGroup is the group the started leader p made (see sysProcAttr).
func newGroup(p *os.Process) (group, error) { return group{p}, nil }

// signal sends sig to the group. A group already gone is not an error.
func (g group) signal(sig os.Signal) error {
	err := syscall.Kill(-g.leader.Pid, sig.(syscall.Signal))
	if errors.Is(err, syscall.ESRCH) || errors.Is(err, syscall.EPERM) {
		// ESRCH: nobody left. EPERM: macOS says so when only zombies remain.
		return nil
	}
	return err
}

// kill sends SIGKILL to the group and to the leader itself (in case it left
// the group).
func (g group) kill() error {
	err := g.signal(syscall.SIGKILL)
	if kerr := g.leader.Kill(); kerr != nil && !errors.Is(kerr, os.ErrProcessDone) && err == nil {
		err = kerr
	}
	return err
}

// close releases nothing: a process group needs no handle.
func (g group) close() {}

// exitCode is the exit status, or 128+signal for a process killed by a signal.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// envKeyEqual compares environment variable names; they are case-sensitive.
func envKeyEqual(a, b string) bool { return a == b }

// executableExts is nil: unix executables have no special extension.
func executableExts([]string) []string { return nil }

// findExecutable checks that p is a regular file with an execute bit.
func findExecutable(p string, _ []string) (string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return "", fmt.Errorf("%s is a directory: %w", p, fs.ErrPermission)
	}
	if fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not executable: %w", p, fs.ErrPermission)
	}
	return p, nil
}
