package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// An agent killed while it tries a new version takes the trial with it:
// the trial must not go on serving beside the agent its service manager
// starts next, and that must be the version that was running, not the
// untried one (which may never come up). The "new version" here never comes online
// (it sleeps), so the agent is still waiting for it when it is killed.
func TestSelfUpdateTrialDiesWithTheAgent(t *testing.T) {
	e := newUpdateEnv(t)
	sleeper := filepath.Join(t.TempDir(), "sleeper")
	if err := os.WriteFile(sleeper, []byte("#!/bin/sh\nexec sleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.publish(t, e.key, "1.1.0", sleeper)
	e.waitLog(t, "trying the new version")
	pid := e.agent.cmd.Process.Pid
	var trial int
	waitFor(t, statusTimeout, "the trial process", func() error {
		trial = childOf(t, pid)
		if trial == 0 {
			return errStatus("none yet")
		}
		return nil
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil { // the agent only, not its group
		t.Fatal(err)
	}
	// Not <-e.agent.done: a trial left running holds the agent's output
	// open, so that waits for the trial too.
	waitFor(t, statusTimeout, "the agent to die", func() error {
		if alive(pid) {
			return errStatus("not yet")
		}
		return nil
	})
	waitFor(t, statusTimeout, "the trial to end with the agent", func() error {
		if alive(trial) {
			return fmt.Errorf("trial %d still runs", trial)
		}
		return nil
	})

	// The service manager starts the binary again: it is the version that
	// was killed, never the untried one. (The release is withdrawn first,
	// so that it is not tried again at once.)
	if err := os.Remove(filepath.Join(e.releases, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	e.binaryIs(t, e.v1, "the build that was running, after a kill mid-trial")
	e.agent = startCommand(t, nil, exec.Command(e.exe, e.agent.cmd.Args[1:]...))
	e.waitLog(t, "agent default/laptop 1.0.0 serving")
	e.waitLog(t, "agent serving")
	e.waitVersion(t, "1.0.0")
	env := []string{"OUTPOST_URL=" + e.cp.url, "OUTPOST_TOKEN=" + adminToken}
	if out := mustRunWithEnv(t, env, "exec", "--agent", "laptop", "--", "echo", "restarted"); strings.TrimSpace(out) != "restarted" {
		t.Fatalf("exec on the restarted agent: %q", out)
	}
}

// childOf is a child process of pid, 0 if it has none.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if ppid, _ := procStat(p); ppid == pid {
			return p
		}
	}
	return 0
}

// alive reports a process that exists and is not a zombie.
func alive(pid int) bool {
	_, state := procStat(pid)
	return state != "" && state != "Z" && state != "X"
}

// procStat is a process's parent and state from /proc/PID/stat ("" when it
// is gone).
func procStat(pid int) (int, string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ""
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0, ""
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid, f[0]
}
