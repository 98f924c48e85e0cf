//go:build unix

package proc

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// The rlimit shim (darwin's mechanism, run here on this machine's kernel):
// the program it execs runs with the limits set and its own argv, and a
// limit it cannot live under stops it rather than let it run without.
func TestRlimitShim(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/limits")
	}
	cmd := exec.Command("/bin/cat", "/proc/self/limits")
	cmd.Args[0] = "my-cat"
	if err := shimWrap(cmd, shimSpec{mem: 1 << 30, nproc: 4096}); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("shim: %v", err)
	}
	for _, want := range []string{"Max address space         1073741824           1073741824", "Max processes             4096                 4096"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("limits lack %q:\n%s", want, out)
		}
	}
	cmd = exec.Command("/bin/sh", "-c", `tr '\0' ' ' < /proc/$$/cmdline`)
	cmd.Args[0] = "my-sh"
	shimWrap(cmd, shimSpec{nproc: 4096})
	if out, err := cmd.Output(); err != nil || !strings.HasPrefix(string(out), "my-sh -c ") {
		t.Errorf("the program's argv: %q %v, want its own argv[0]", out, err)
	}

	// 4 KiB of address space: the shim (a Go program) or the exec fails
	// under it; either way the program never runs.
	cmd = exec.Command("/bin/echo", "RAN")
	shimWrap(cmd, shimSpec{mem: 4096})
	out, err = cmd.Output()
	if err == nil || strings.Contains(string(out), "RAN") {
		t.Fatalf("a limit too small to run under: %v %q, want a failure and no output", err, out)
	}
}

// Through the Manager, as darwin's agent runs it: a started command sees
// the process limit of the owner's policy.
func TestRlimitShimThroughTheManager(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses dash's ulimit -p")
	}
	if _, err := os.Stat("/bin/dash"); err != nil {
		t.Skip("no dash")
	}
	m, _ := newTestManager(t)
	m.confine = shimRlimits{}
	m.resources = func() Resources { return Resources{Processes: 777} }
	res, err := m.Exec(context.Background(), ExecRequest{Argv: []string{"dash", "-c", "ulimit -p"}})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "777" {
		t.Fatalf("ulimit -p under the shim: %q %q %v, want 777", res.Stdout, res.Stderr, err)
	}
	if m.LimitsBy() != LimitsByRlimit {
		t.Fatalf("LimitsBy %q", m.LimitsBy())
	}
}
