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

// killGroup sends SIGKILL to p's process group and to p itself (in case it
// left the group). A group or process already gone is not an error.
func killGroup(p *os.Process) error {
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) || errors.Is(err, syscall.EPERM) {
		// ESRCH: nobody left. EPERM: macOS says so when only zombies remain.
		err = nil
	}
	if kerr := p.Kill(); kerr != nil && !errors.Is(kerr, os.ErrProcessDone) && err == nil {
		err = kerr
	}
	return err
}

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
