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

// shimmed is cmd started through the start shim taking the rlimits spec.
func shimmed(t *testing.T, cmd *exec.Cmd, spec string) *exec.Cmd {
	t.Helper()
	self, err := selfBinary()
	if err != nil {
		t.Fatal(err)
	}
	throughShim(cmd, self, rlimitsEnv, spec)
	return cmd
}

// The rlimits half of the start shim, which darwin's agent relies on (run
// here on this machine's kernel): the program it execs runs with the
// limits and its own argv, and a limit it cannot live under stops it
// rather than let it run without.
func TestShimRlimits(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/limits")
	}
	cmd := exec.Command("/bin/cat", "/proc/self/limits")
	out, err := shimmed(t, cmd, rlimitSpec(Resources{MemoryBytes: 1 << 30, Processes: 4096, CPUPercent: 50})).Output()
	if err != nil {
		t.Fatalf("shim: %v", err)
	}
	for _, want := range []string{"Max address space         1073741824           1073741824", "Max processes             4096                 4096"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("limits lack %q:\n%s", want, out)
		}
	}
	cmd = exec.Command("/bin/sh", "-c", `tr '\0' ' ' < /proc/$$/cmdline; env`)
	cmd.Args[0] = "my-sh"
	out, err = shimmed(t, cmd, "nproc=4096").Output()
	if err != nil || !strings.HasPrefix(string(out), "my-sh -c ") || strings.Contains(string(out), rlimitsEnv) {
		t.Errorf("the program's argv and env: %q %v, want its own argv[0] and no marker", out, err)
	}
	// 4 KiB of address space: the shim (a Go program) or the exec fails
	// under it; either way the program never runs.
	out, err = shimmed(t, exec.Command("/bin/echo", "RAN"), "as=4096").Output()
	if err == nil || strings.Contains(string(out), "RAN") {
		t.Fatalf("a limit too small to run under: %v %q, want a failure and no output", err, out)
	}
}

// darwin's confiner through the Manager, run here: a started command sees
// the process limit of the owner's policy.
func TestShimRlimitsThroughTheManager(t *testing.T) {
	if _, err := os.Stat("/bin/dash"); err != nil || runtime.GOOS != "linux" {
		t.Skip("uses dash's ulimit -p")
	}
	m, _ := newTestManager(t)
	confineWith(m, shimRlimits{})
	m.resources = func() Resources { return Resources{Processes: 777} }
	res, err := m.Exec(context.Background(), ExecRequest{Argv: []string{"dash", "-c", "ulimit -p"}})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "777" {
		t.Fatalf("ulimit -p under the shim: %q %q %v, want 777", res.Stdout, res.Stderr, err)
	}
	if m.LimitsBy() != LimitsByRlimit {
		t.Fatalf("LimitsBy %q", m.LimitsBy())
	}
}
