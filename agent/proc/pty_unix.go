//go:build unix

package proc

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/creack/pty"
)

// PTYSupported reports whether processes can run on a pseudo-terminal here.
const PTYSupported = true

// attachPTY opens a pseudo-terminal of cols × rows and makes it cmd's
// stdin, stdout, stderr and controlling terminal, in a new session (whose
// id, like its process group's, is the child's pid). It returns the master
// and the slave; the caller keeps the slave open while the process runs.
func attachPTY(cmd *exec.Cmd, cols, rows int) (master, slave *os.File, err error) {
	master, slave, err = pty.Open()
	if err != nil {
		return nil, nil, err
	}
	if err := pty.Setsize(master, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	attr := &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	setDeathSignal(attr)
	cmd.SysProcAttr = attr
	return master, slave, nil
}

// resizePTY sets the terminal size; the kernel sends SIGWINCH to its
// foreground group.
func resizePTY(master *os.File, cols, rows int) error {
	return pty.Setsize(master, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
}

// signals is the allow-list of signals a client may send. STOP and CONT are
// left out on purpose: a stopped process looks idle.
var signals = map[string]os.Signal{
	"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL,
	"HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT,
	"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
}

// termSignal asks a process group to end.
var termSignal os.Signal = syscall.SIGTERM

// hangupSignal is what a process started with Hangup gets when its last
// reader is gone.
var hangupSignal os.Signal = syscall.SIGHUP
