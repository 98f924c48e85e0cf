package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// helperEnv makes the test binary a helper process (see runHelper); a
// request sets it, since the agent's own environment is not the point.
const helperEnv = "PROC_TEST_HELPER"

// platformHelpers are the helper modes of one platform's tests, by name;
// their files add them in init.
var platformHelpers = map[string]func() int{}

// grandchildPid is the file, in its working directory, where a "tree"
// helper's child writes its pid.
const grandchildPid = "grandchild.pid"

// runHelper is the test binary as a helper process, portable to every OS:
//
//	tree:   start a "sleep" child holding our stdout and stderr, wait for
//	        its pid file, then sleep a minute
//	orphan: the same, but exit 0 as soon as the child is up
//	sleep:  write our pid to grandchildPid, then sleep a minute
func runHelper(mode string) int {
	switch mode {
	case "tree", "orphan":
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		child := exec.Command(self)
		child.Env = append(os.Environ(), helperEnv+"=sleep")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		for deadline := time.Now().Add(generous); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, ok := tryReadPid(grandchildPid); ok {
				break
			}
		}
		if mode == "orphan" {
			return 0
		}
	case "sleep":
		tmp := grandchildPid + ".tmp"
		if err := os.WriteFile(tmp, []byte(fmt.Sprintln(os.Getpid())), 0o644); err != nil || os.Rename(tmp, grandchildPid) != nil {
			return 2
		}
	default:
		if run, ok := platformHelpers[mode]; ok {
			return run()
		}
		return 2
	}
	time.Sleep(time.Minute)
	return 0
}

// TestKillReachesGrandchildren: whatever ends a process (timeout,
// terminate, the end of output collection after the leader exits, the
// Manager's close) kills the children its children started: a process
// group on unix, a job object on Windows.
func TestKillReachesGrandchildren(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mode string
		run  func(t *testing.T, m *Manager, argv []string, env map[string]string, cwd string)
	}{
		{name: "exec timeout", mode: "tree", run: func(t *testing.T, m *Manager, argv []string, env map[string]string, cwd string) {
			res, err := m.Exec(context.Background(), ExecRequest{Argv: argv, Env: env, Cwd: cwd, Timeout: 3 * time.Second})
			if err != nil || !res.TimedOut || res.ExitCode != TimeoutExitCode {
				t.Fatalf("exec = %+v, %v; want a timeout", res, err)
			}
		}},
		{name: "exec leader exits", mode: "orphan", run: func(t *testing.T, m *Manager, argv []string, env map[string]string, cwd string) {
			res, err := m.Exec(context.Background(), ExecRequest{Argv: argv, Env: env, Cwd: cwd})
			if err != nil || res.ExitCode != 0 || res.TimedOut {
				t.Fatalf("exec = %+v, %v; want exit 0", res, err)
			}
		}},
		{name: "terminate", mode: "tree", run: func(t *testing.T, m *Manager, argv []string, env map[string]string, cwd string) {
			id := start(t, m, StartRequest{Argv: argv, Env: env, Cwd: cwd})
			readPid(t, filepath.Join(m.root, cwd, grandchildPid))
			if was, err := m.Terminate(id); !was || err != nil {
				t.Fatalf("terminate = %v, %v", was, err)
			}
			waitClosed(t, m, id)
		}},
		{name: "process leader exits", mode: "orphan", run: func(t *testing.T, m *Manager, argv []string, env map[string]string, cwd string) {
			waitClosed(t, m, start(t, m, StartRequest{Argv: argv, Env: env, Cwd: cwd}))
		}},
		{name: "close", mode: "tree", run: func(t *testing.T, m *Manager, argv []string, env map[string]string, cwd string) {
			start(t, m, StartRequest{Argv: argv, Env: env, Cwd: cwd})
			readPid(t, filepath.Join(m.root, cwd, grandchildPid))
			m.Close()
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, root := newTestManager(t)
			cwd := fmt.Sprint(i)
			if err := os.Mkdir(filepath.Join(root, cwd), 0o755); err != nil {
				t.Fatal(err)
			}
			tt.run(t, m, []string{self}, map[string]string{helperEnv: tt.mode}, cwd)
			wantDead(t, readPid(t, filepath.Join(root, cwd, grandchildPid)))
		})
	}
}
