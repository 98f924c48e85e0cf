package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// lostBound is how long the CLI may take to say the agent is gone: the
// server notices a dead agent's read within 5 s, the CLI gives it 10 s
// more, plus slack for a loaded machine.
const lostBound = 30 * time.Second

// terminal is the outpost CLI running in a real PTY.
type terminal struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	out  *syncBuffer
	done chan struct{}
	err  error
}

// startTerminal runs outpost args in a new PTY of 100×30 with e's env.
func startTerminal(t *testing.T, e *agentEnv, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(outpostBin, args...)
	cmd.Env = append(e.cliEnv(), "PS1=$ ", "TERM=xterm-outpost")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 100, Rows: 30})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, cmd: cmd, pty: f, out: &syncBuffer{}, done: make(chan struct{})}
	go func() { _, _ = io.Copy(term.out, f) }() // ends when f closes
	go func() { term.err = cmd.Wait(); close(term.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-term.done
		f.Close()
		if t.Failed() {
			t.Logf("terminal of outpost %v:\n%s", args, term.out.String())
		}
	})
	return term
}

func (term *terminal) typeIn(s string) {
	term.t.Helper()
	if _, err := term.pty.Write([]byte(s)); err != nil {
		term.t.Fatal(err)
	}
}

func (term *terminal) expect(want string, within time.Duration) {
	term.t.Helper()
	waitFor(term.t, within, "terminal shows "+strconv.Quote(want), func() error {
		if !strings.Contains(term.out.String(), want) {
			return fmt.Errorf("terminal so far: %q", term.out.String())
		}
		return nil
	})
}

// wantExit waits up to within for the CLI to exit with code.
func (term *terminal) wantExit(code int, within time.Duration) {
	term.t.Helper()
	select {
	case <-term.done:
	case <-time.After(within):
		term.t.Fatalf("outpost still running after %s; terminal:\n%s", within, term.out.String())
	}
	got := 0
	var ee *exec.ExitError
	if errors.As(term.err, &ee) {
		got = ee.ExitCode()
	} else if term.err != nil {
		term.t.Fatal(term.err)
	}
	if got != code {
		term.t.Fatalf("exit status %d, want %d; terminal:\n%s", got, code, term.out.String())
	}
}

// TestTerminalWithoutTTYDoesNotHang: exec -t with stdin not a terminal
// says so and runs without a PTY, so bash reads EOF and ends.
func TestTerminalWithoutTTYDoesNotHang(t *testing.T) {
	e := newAgentEnv(t)
	cmd := exec.Command(outpostBin, "exec", "-t", "--", "bash")
	cmd.Env = e.cliEnv()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	cmd.Stdin = null
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(stderr.String(), "Pseudo-terminal will not be allocated") {
			t.Fatalf("exec -t -- bash </dev/null: %v, stderr %q", err, stderr.String())
		}
	case <-time.After(statusTimeout):
		_ = cmd.Process.Kill()
		t.Fatalf("exec -t -- bash </dev/null still running after %s", statusTimeout)
	}
}

// TestTerminalLoginShellAndEnv: exec -t alone starts a login shell, with
// TERM forwarded and USER, HOME and LOGNAME set.
func TestTerminalLoginShellAndEnv(t *testing.T) {
	e := newAgentEnv(t)
	term := startTerminal(t, e, "exec", "-t")
	shell := os.Getenv("SHELL") // the agent's, which it inherits from the test
	if shell == "" {
		shell = "/bin/sh"
	}
	want := "t=xterm-outpost u=set h=set l=set args=" + shell + " -l"
	// A line typed while the shell starts may be lost: type it until it ran.
	waitFor(t, statusTimeout, "the login shell's answer", func() error {
		term.typeIn(`echo "t=$TERM u=${USER:+set} h=${HOME:+set} l=${LOGNAME:+set} args=$(ps -o args= -p $$)"` + "\r")
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if strings.Contains(term.out.String(), want) {
				return nil
			}
			time.Sleep(pollEvery)
		}
		return fmt.Errorf("terminal so far: %q", term.out.String())
	})
	term.typeIn("exit 4\r")
	term.wantExit(4, statusTimeout)
}

// TestTerminalAgentLost: when the agent dies mid-session, the CLI says
// "connection to agent lost" within a bound and exits 255.
func TestTerminalAgentLost(t *testing.T) {
	e := newAgentEnv(t)
	term := startTerminal(t, e, "exec", "-t", "--", "sh")
	term.typeIn("echo ready-$((40+2))\r")
	term.expect("ready-42", statusTimeout)
	e.agent.kill()
	term.expect("connection to agent lost", lostBound)
	term.wantExit(255, statusTimeout)
}

// TestTerminalEscapes: ~? prints the help, ~. after a newline disconnects
// (exit 255); a ~ inside a line is typed as is.
func TestTerminalEscapes(t *testing.T) {
	e := newAgentEnv(t)
	term := startTerminal(t, e, "exec", "-t", "--", "sh")
	term.typeIn("echo a~b\r")
	term.expect("a~b\r\n", statusTimeout)
	term.typeIn("~?")
	term.expect("Supported escape sequences", statusTimeout)
	term.typeIn("\r~.")
	term.expect("disconnected", statusTimeout)
	term.wantExit(255, statusTimeout)
}

// TestSecondSignalEndsCLI: the first TERM goes to the remote process
// (which ignores it here), the second ends the CLI.
func TestSecondSignalEndsCLI(t *testing.T) {
	e := newAgentEnv(t)
	p := startProc(t, e.cliEnv()[len(os.Environ()):], "exec", "--", "sh", "-c", `trap 'echo got-term' TERM; echo ready; while :; do sleep 0.1; done`)
	waitFor(t, statusTimeout, "ready", func() error {
		if !strings.Contains(p.output(), "ready") {
			return fmt.Errorf("output so far %q", p.output())
		}
		return nil
	})
	p.signal(syscall.SIGTERM)
	waitFor(t, statusTimeout, "the remote process got TERM", func() error {
		if !strings.Contains(p.output(), "got-term") {
			return fmt.Errorf("output so far %q", p.output())
		}
		return nil
	})
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(statusTimeout):
		t.Fatalf("outpost exec still running after a second TERM; output %q", p.output())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 255 || !strings.Contains(p.output(), "interrupted") {
		t.Fatalf("exit %d, output %q; want 255 and interrupted", code, p.output())
	}
}

// TestHangupAfterClientGone: a process of exec -t whose CLI was killed
// gets SIGHUP once the grace has passed (30 s, plus a read in flight).
func TestHangupAfterClientGone(t *testing.T) {
	e := newAgentEnv(t)
	term := startTerminal(t, e, "exec", "-t", "--", "sh", "-c", "echo started; exec sleep 1000")
	term.expect("started", statusTimeout)
	ps, err := e.target.ListProcesses(ctx(t))
	if err != nil || len(ps) != 1 {
		t.Fatalf("processes: %+v, %v", ps, err)
	}
	_ = term.cmd.Process.Kill()
	<-term.done
	killed := time.Now()
	waitFor(t, 90*time.Second, "sleep hung up", func() error {
		p, err := e.target.GetProcess(ctx(t), ps[0].ID)
		if err != nil {
			return err
		}
		if p.ExitCode == nil {
			return fmt.Errorf("still running")
		}
		if *p.ExitCode != 128+int(syscall.SIGHUP) {
			return errStop{fmt.Errorf("exit code %d, want %d (SIGHUP)", *p.ExitCode, 128+int(syscall.SIGHUP))}
		}
		return nil
	})
	if d := time.Since(killed); d < 25*time.Second {
		t.Fatalf("hung up %s after the client left, before the 30 s grace", d)
	}
}

// TestPsAttachKill: a detached process is listed by ps, attach shows its
// output and forwards stdin, kill ends it.
func TestPsAttachKill(t *testing.T) {
	e := newAgentEnv(t)
	env := e.cliEnv()
	out, err := cliOutput(env, "exec", "--detach", "--", "sh", "-c", `echo one; read x; echo "got:$x"; exec sleep 1000`)
	if err != nil {
		t.Fatalf("exec --detach: %v\n%s", err, out)
	}
	id := strings.TrimSpace(out)
	out, err = cliOutput(env, "ps")
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "running (detached)") {
		t.Fatalf("ps: %v\n%s", err, out)
	}
	attach := exec.Command(outpostBin, "attach", id)
	attach.Env = env
	stdin, err := attach.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var got syncBuffer
	attach.Stdout, attach.Stderr = &got, &got
	if err := attach.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = attach.Process.Kill(); _ = attach.Wait() }()
	if _, err := io.WriteString(stdin, "hi\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, statusTimeout, "attach output", func() error {
		if got.String() != "one\ngot:hi\n" {
			return fmt.Errorf("output so far %q", got.String())
		}
		return nil
	})
	if out, err := cliOutput(env, "kill", id); err != nil {
		t.Fatalf("kill: %v\n%s", err, out)
	}
	// The attached CLI sees the end and passes the status on.
	if err := attach.Wait(); err == nil || attach.ProcessState.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Fatalf("attach ended with %v, want exit %d", err, 128+int(syscall.SIGTERM))
	}
	out, err = cliOutput(env, "ps")
	if err != nil || !strings.Contains(out, "exited 143") {
		t.Fatalf("ps after kill: %v\n%s", err, out)
	}
}

// cliOutput runs the outpost CLI and returns its combined output.
func cliOutput(env []string, args ...string) (string, error) {
	cmd := exec.Command(outpostBin, args...)
	cmd.Env = env
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// TestExecResumesAcrossControlPlaneRestart: when the control plane
// restarts under a running exec, the CLI reconnects and resumes after the
// last seq it got: every line once, in order, and the exit status.
func TestExecResumesAcrossControlPlaneRestart(t *testing.T) {
	e := newAgentEnv(t)
	p := startProc(t, e.cliEnv()[len(os.Environ()):], "exec", "--", "sh", "-c",
		`i=0; while [ $i -lt 80 ]; do echo line-$i; i=$((i+1)); sleep 0.1; done; exit 6`)
	waitFor(t, statusTimeout, "output before the restart", func() error {
		if !strings.Contains(p.output(), "line-5\n") {
			return fmt.Errorf("output so far %q", p.output())
		}
		return nil
	})
	e.cp.restart()
	select {
	case <-p.done:
	case <-time.After(lostBound + statusTimeout):
		t.Fatalf("exec still running; output %q", p.output())
	}
	var want strings.Builder
	for i := range 80 {
		fmt.Fprintf(&want, "line-%d\n", i)
	}
	if got := p.output(); got != want.String() || p.cmd.ProcessState.ExitCode() != 6 {
		t.Fatalf("exit %d, output %q; want every line once and 6", p.cmd.ProcessState.ExitCode(), got)
	}
}
