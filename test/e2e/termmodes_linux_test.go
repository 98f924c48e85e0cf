package e2e

import (
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// sharedTerminal is the CLI on a PTY whose slave side the test holds, as a
// shell does: the CLI's stdin, stdout and stderr are that same file
// description, so what the CLI leaves on it the shell finds.
type sharedTerminal struct {
	terminal
	slave *os.File
	fd    int // the slave's: (*os.File).Fd would make it blocking again
	modes *unix.Termios
}

func startSharedTerminal(t *testing.T, e *agentEnv, args ...string) *sharedTerminal {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(m, &pty.Winsize{Cols: 100, Rows: 30}); err != nil {
		t.Fatal(err)
	}
	fd := int(s.Fd()) // blocking, as a shell's terminal is
	modes, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(outpostBin, args...)
	cmd.Env = append(e.cliEnv(), "PS1=$ ", "TERM=xterm-outpost")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	st := &sharedTerminal{terminal: terminal{t: t, cmd: cmd, pty: m, out: &syncBuffer{}, done: make(chan struct{})}, slave: s, fd: fd, modes: modes}
	go func() { _, _ = io.Copy(st.out, m) }()
	go func() { st.err = cmd.Wait(); close(st.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-st.done
		s.Close()
		m.Close()
		if t.Failed() {
			t.Logf("terminal of outpost %v:\n%s", args, st.out.String())
		}
	})
	return st
}

// wantLeftAsFound: after the CLI exited, the terminal's modes are those it
// found (raw mode undone) and the description it shares with the shell is
// blocking still (a shell's read of a non-blocking terminal fails EAGAIN).
func (st *sharedTerminal) wantLeftAsFound() {
	st.t.Helper()
	got, err := unix.IoctlGetTermios(st.fd, unix.TCGETS)
	if err != nil {
		st.t.Fatal(err)
	}
	if got.Iflag != st.modes.Iflag || got.Oflag != st.modes.Oflag || got.Lflag != st.modes.Lflag || got.Cflag != st.modes.Cflag || got.Cc != st.modes.Cc {
		st.t.Fatalf("terminal modes after the CLI %+v, want those before %+v", got, st.modes)
	}
	fl, err := unix.FcntlInt(uintptr(st.fd), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK != 0 {
		st.t.Fatalf("shared description flags %#x, %v: want blocking", fl, err)
	}
}

// TestTerminalLeavesShellTerminal: on every way exec -t ends (the
// process's exit, ~., a second TERM, the agent lost), the terminal is
// left as found: modes restored, the shell's description blocking.
func TestTerminalLeavesShellTerminal(t *testing.T) {
	t.Run("exit", func(t *testing.T) {
		e := newAgentEnv(t)
		st := startSharedTerminal(t, e, "exec", "-t", "--", "sh")
		st.typeIn("echo ready-$((40+2)); exit 3\r")
		st.wantExit(3, statusTimeout)
		st.wantLeftAsFound()
	})
	t.Run("escape", func(t *testing.T) {
		e := newAgentEnv(t)
		st := startSharedTerminal(t, e, "exec", "-t", "--", "sh")
		st.typeIn("echo ready-$((40+2))\r")
		st.expect("ready-42", statusTimeout)
		st.typeIn("\r~.")
		st.wantExit(255, statusTimeout)
		st.wantLeftAsFound()
	})
	t.Run("signals", func(t *testing.T) {
		e := newAgentEnv(t)
		st := startSharedTerminal(t, e, "exec", "-t", "--", "sh", "-c", `trap 'echo got-term' TERM; echo ready; while :; do sleep 0.1; done`)
		st.expect("ready", statusTimeout)
		_ = st.cmd.Process.Signal(syscall.SIGTERM)
		st.expect("got-term", statusTimeout)
		_ = st.cmd.Process.Signal(syscall.SIGTERM)
		st.wantExit(255, statusTimeout)
		// The CLI has exited; its last words may still be on their way
		// from the PTY to the test's reader.
		st.expect("interrupted", statusTimeout)
		st.wantLeftAsFound()
	})
	t.Run("lost", func(t *testing.T) {
		e := newAgentEnv(t)
		st := startSharedTerminal(t, e, "exec", "-t", "--", "sh")
		st.typeIn("echo ready-$((40+2))\r")
		st.expect("ready-42", statusTimeout)
		e.agent.kill()
		st.expect("connection to agent lost", lostBound)
		st.wantExit(255, statusTimeout)
		st.wantLeftAsFound()
	})
}
