//go:build unix

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
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
	if master, err = pollable(master); err != nil {
		slave.Close()
		return nil, nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	attr := &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	setDeathSignal(attr)
	cmd.SysProcAttr = attr
	return master, slave, nil
}

// pollable returns the master as a non-blocking file on Go's poller (and
// closes f). pty.Open hands it over in blocking mode (it asked for the
// descriptor): then every read of the pump holds a thread in a syscall,
// and what it makes ready (the goroutine that publishes the output) may
// wait for that thread's processor to be taken back, tens of
// microseconds on a keystroke's path. On the poller a read parks the
// goroutine instead, a close ends it, and a write can be tried without
// blocking (tryWrite).
func pollable(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pty: dup: %w", err)
	}
	f.Close()
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("pty: non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}

// resizePTY sets the terminal size; the kernel sends SIGWINCH to its
// foreground group. It goes through the raw descriptor: Setsize would
// call Fd, which puts the file back in blocking mode.
func resizePTY(master *os.File, cols, rows int) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	err = rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	})
	if err != nil {
		return err
	}
	return ierr
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
