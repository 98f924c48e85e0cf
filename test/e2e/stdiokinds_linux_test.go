package e2e

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// TestExecStdioKinds: outpost exec forwards stdin and writes the process's
// output whatever its stdin and stdout are: a regular file (read from
// where it stands, output appended), a socket, /dev/null, and pipes when
// /proc is not there to open them anew.
func TestExecStdioKinds(t *testing.T) {
	e := newAgentEnv(t)
	run := func(t *testing.T, cmd *exec.Cmd) {
		t.Helper()
		cmd.Env = e.cliEnv()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatal(err)
			}
			t.Fatalf("outpost exec: %v, stderr %q", err, stderr.String())
		}
	}
	t.Run("regular files", func(t *testing.T) {
		dir := t.TempDir()
		in := filepath.Join(dir, "in")
		if err := os.WriteFile(in, []byte("skipped\nfrom a file\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		inf, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		defer inf.Close()
		if _, err := inf.Seek(int64(len("skipped\n")), io.SeekStart); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		if err := os.WriteFile(out, []byte("before\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		outf, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer outf.Close()
		cmd := exec.Command(outpostBin, "exec", "--", "cat")
		cmd.Stdin, cmd.Stdout = inf, outf
		run(t, cmd)
		if got, _ := os.ReadFile(out); string(got) != "before\nfrom a file\n" {
			t.Fatalf("output file %q", got)
		}
	})
	t.Run("sockets", func(t *testing.T) {
		pair := func() (*os.File, *os.File) {
			a, b := socketPair(t)
			return a, b
		}
		inLocal, inCLI := pair()
		outLocal, outCLI := pair()
		defer inLocal.Close()
		defer outLocal.Close()
		cmd := exec.Command(outpostBin, "exec", "--", "cat")
		cmd.Stdin, cmd.Stdout = inCLI, outCLI
		if _, err := inLocal.Write([]byte("through a socket\n")); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() { b, _ := io.ReadAll(outLocal); got <- string(b) }()
		cmd.Env = e.cliEnv()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		inCLI.Close()
		outCLI.Close()
		c, _ := net.FileConn(inLocal)
		_ = c.(*net.UnixConn).CloseWrite()
		c.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("outpost exec: %v, stderr %q", err, stderr.String())
		}
		if s := <-got; s != "through a socket\n" {
			t.Fatalf("output %q", s)
		}
	})
	t.Run("dev null", func(t *testing.T) {
		cmd := exec.Command(outpostBin, "exec", "--", "sh", "-c", "cat; echo done")
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		cmd.Stdin = null
		var out bytes.Buffer
		cmd.Stdout = &out
		run(t, cmd)
		if out.String() != "done\n" {
			t.Fatalf("output %q", out.String())
		}
		cmd = exec.Command(outpostBin, "exec", "--", "echo", "to null")
		cmd.Stdin, cmd.Stdout = strings.NewReader(""), null
		run(t, cmd)
	})
	t.Run("no proc", func(t *testing.T) {
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Fatal("unshare not installed")
		}
		cmd := exec.Command("unshare", "-m", "sh", "-c", `mount -t tmpfs none /proc && exec "$0" exec -- cat`, outpostBin)
		cmd.Stdin = strings.NewReader("without /proc\n")
		var out bytes.Buffer
		cmd.Stdout = &out
		run(t, cmd)
		if out.String() != "without /proc\n" {
			t.Fatalf("output %q", out.String())
		}
	})
}

// socketPair is a connected pair of Unix stream sockets as files.
func socketPair(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	fds, err := syscallSocketpair()
	if err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fds[0]), "sock0"), os.NewFile(uintptr(fds[1]), "sock1")
}

func syscallSocketpair() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
}

// TestExecStdinPTYMaster: stdin may be a PTY's master side (a program
// that drives the CLI as a terminal would its user, or passes its own
// master on): what is typed on the slave side reaches the process. (A
// master opened anew through /proc is a new PTY, whose input never comes.)
func TestExecStdinPTYMaster(t *testing.T) {
	e := newAgentEnv(t)
	m, s, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer s.Close()
	cmd := exec.Command(outpostBin, "exec", "--", "head", "-c", "5")
	cmd.Env = e.cliEnv()
	cmd.Stdin = m
	var out, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	time.Sleep(500 * time.Millisecond) // the CLI has set up its stdin
	if _, err := s.Write([]byte("typed")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || out.String() != "typed" {
			t.Fatalf("outpost exec: %v, output %q, stderr %q; want typed", err, out.String(), stderr.String())
		}
	case <-time.After(statusTimeout):
		t.Fatalf("what was written to the slave side never reached the process (%s); output %q", statusTimeout, out.String())
	}
}
