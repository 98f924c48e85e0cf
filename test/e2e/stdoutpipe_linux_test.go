package e2e

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExecStdoutReaderGone: `outpost exec -- producer | head -1`: when the
// reader of the CLI's stdout (a pipe) is gone, the CLI ends as a filter
// does, by SIGPIPE, and says nothing of being interrupted.
func TestExecStdoutReaderGone(t *testing.T) {
	e := newAgentEnv(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(outpostBin, "exec", "--", "sh", "-c", "while :; do echo line; sleep 0.01; done")
	cmd.Env = e.cliEnv()
	var stderr syncBuffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "line\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	r.Close() // head -1 is done
	select {
	case err = <-done:
	case <-time.After(statusTimeout):
		t.Fatalf("outpost exec still running %s after its stdout's reader left; stderr %q", statusTimeout, stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("outpost exec ended %v; want killed by SIGPIPE", err)
	}
	ws, _ := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGPIPE || strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("outpost exec ended %v, stderr %q; want killed by SIGPIPE, silent", err, stderr.String())
	}
}
