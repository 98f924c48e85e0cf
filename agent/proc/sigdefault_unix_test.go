//go:build unix

package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

func init() { platformHelpers["sigdefault"] = runSigDefault }

// runSigDefault is the helper of TestChildSignalsDefault: started with HUP
// and INT ignored, it runs a Manager, signals a started sleep with each and
// prints the exit codes ("HUP 129" when it died of it).
func runSigDefault() int {
	if os.Getenv("SIGDEFAULT_IGNORED") == "1" {
		for _, sig := range inheritedIgnorable {
			if !signal.Ignored(sig) {
				fmt.Printf("helper: %v not ignored at start\n", sig)
				return 3
			}
		}
	}
	root, err := os.MkdirTemp("", "sigdefault")
	if err != nil {
		fmt.Println(err)
		return 2
	}
	defer os.RemoveAll(root)
	m, err := NewManager(Config{Root: root})
	if err != nil {
		fmt.Println(err)
		return 2
	}
	defer m.Close()
	for _, name := range []string{"HUP", "INT", "USR1"} {
		id, _, err := m.Start(StartRequest{Argv: []string{"sleep", "60"}})
		if err != nil {
			fmt.Println(err)
			return 2
		}
		// Signal the sleep itself, not a shim on its way to exec it.
		if in, err := m.Get(id); err == nil {
			waitComm(in.PID, "sleep")
		}
		if err := m.Signal(id, name); err != nil {
			fmt.Println(err)
			return 2
		}
		ctx, cancel := context.WithTimeout(context.Background(), generous)
		info, err := m.Wait(ctx, id)
		cancel()
		if err != nil || info.ExitCode == nil {
			fmt.Printf("%s: sleep still running after the signal: %v\n", name, err)
			continue
		}
		fmt.Printf("%s %d\n", name, *info.ExitCode)
	}
	if os.Getenv("SIGDEFAULT_IGNORED") != "1" {
		fmt.Println("done")
		return 0
	}
	// The agent itself still does not die of them.
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		fmt.Println(err)
		return 2
	}
	fmt.Println("alive")
	return 0
}

// waitComm waits (where /proc tells) until process pid runs the
// program named comm.
func waitComm(pid int, comm string) {
	path := fmt.Sprintf("/proc/%d/comm", pid)
	for deadline := time.Now().Add(generous); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil || strings.TrimSpace(string(b)) == comm {
			return
		}
	}
}

// TestChildSignalsDefault: an agent started under nohup (HUP ignored) or in
// the background of a script (INT ignored) starts its processes with the
// default dispositions, so `signal HUP` and `signal INT` end them, and the
// agent itself still ignores HUP.
func TestChildSignalsDefault(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// trap '' sets SIG_IGN, which exec keeps: what nohup does for HUP.
	cmd := exec.Command("/bin/sh", "-c", `trap '' HUP INT USR1; exec "$0" -test.run=^$`, self)
	cmd.Env = append(os.Environ(), helperEnv+"=sigdefault", "SIGDEFAULT_IGNORED=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	want := fmt.Sprintf("HUP %d\nINT %d\nUSR1 %d\nalive\n", 128+int(syscall.SIGHUP), 128+int(syscall.SIGINT), 128+int(syscall.SIGUSR1))
	if got := string(out); !strings.HasSuffix(got, want) {
		t.Fatalf("helper printed %q, want %q", got, want)
	}
}
