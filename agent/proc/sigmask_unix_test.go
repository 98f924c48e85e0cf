//go:build linux || darwin

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func init() { platformHelpers["blockexec"] = runBlockExec }

// runBlockExec blocks HUP and INT on this thread and execs the test binary
// as the sigdefault helper: an agent started with those signals blocked.
func runBlockExec() int {
	runtime.LockOSThread()
	if err := blockSignals(syscall.SIGHUP, syscall.SIGINT, syscall.SIGUSR1); err != nil {
		fmt.Println(err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Println(err)
		return 2
	}
	// The first of a repeated variable wins: replace ours.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, helperEnv+"=") })
	env = append(env, helperEnv+"=sigdefault")
	err = syscall.Exec(self, []string{self, "-test.run=^$"}, env)
	fmt.Println(err)
	return 2
}

// TestChildSignalsUnblocked: an agent started with HUP, INT and USR1
// blocked (a supervisor's mask, inherited) starts its processes with an
// empty mask, so `signal HUP`, `INT` and `USR1` end them. (The Go runtime
// unblocks HUP and INT itself; USR1 stays blocked without the shim.)
func TestChildSignalsUnblocked(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=blockexec")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	want := fmt.Sprintf("HUP %d\nINT %d\nUSR1 %d\ndone\n", 128+int(syscall.SIGHUP), 128+int(syscall.SIGINT), 128+int(syscall.SIGUSR1))
	if got := string(out); !strings.HasSuffix(got, want) {
		t.Fatalf("helper printed %q, want %q", got, want)
	}
}
