package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// memoryBoxOf is the cgroup that bounds pid's memory and the bound in it
// (memory.limit_in_bytes under v1, memory.max under v2; -1 for "max").
func memoryBoxOf(t *testing.T, pid int) (string, int64) {
	t.Helper()
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := cgroupsOf(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	dir, file := filepath.Join(mounts["memory"], paths["memory"]), "memory.limit_in_bytes"
	if _, v1 := paths["memory"]; !v1 {
		dir, file = filepath.Join(mounts[unified], paths[unified]), "memory.max"
	}
	v, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatalf("the memory bound of %d: %v", pid, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
	if err != nil {
		return dir, -1
	}
	return dir, n
}

// Every Manager of one process shares its directory of boxes (two agents of
// one process, as in the bench's fleet): one closing, even twice, leaves the
// other's limits in force, and the last to close removes it.
func TestManagersShareTheirBoxes(t *testing.T) {
	const bound = 64 << 20
	limits := func() Resources { return Resources{Processes: 50, MemoryBytes: bound} }
	mgr := func() *Manager {
		m, err := NewManager(Config{Root: t.TempDir(), Resources: limits})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	first, second := mgr(), mgr()
	if by := first.LimitsBy(); by != LimitsByCgroup1 && by != LimitsByCgroup2 {
		t.Skipf("limits applied by %s: no cgroup boxes on this machine", by)
	}
	if _, err := first.Exec(t.Context(), ExecRequest{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	dirs := boxDirsOf(first)
	first.Close()
	first.Close()
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("the directory of boxes %s, which the other Manager uses, is gone after one Closed (twice): %v", d, err)
		}
	}

	id, pid, err := second.Start(StartRequest{Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatalf("a start after another Manager of this process closed: %v", err)
	}
	box, limit := memoryBoxOf(t, pid)
	if limit != bound || !strings.Contains(box, fmt.Sprintf("outpost-%d", os.Getpid())) {
		t.Fatalf("process in %s with memory bound %d, want a box of this agent bounded at %d", box, limit, bound)
	}
	if _, err := second.Terminate(id); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, second, id)
	second.Close()
	if _, err := os.Stat(filepath.Dir(box)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory of boxes %s outlived the last Manager: %v", filepath.Dir(box), err)
	}
}

// boxDirsOf are the directories of boxes m's confiner holds.
func boxDirsOf(m *Manager) []string {
	switch c := m.confine.(type) {
	case *cgroup1:
		var out []string
		for _, d := range c.dirs {
			out = append(out, d)
		}
		return out
	case *cgroup2:
		return []string{c.dir}
	}
	return nil
}

// An agent killed without closing leaves its directory of boxes; the next
// agent under the same cgroup removes it, and nothing of a running agent
// or a box that still holds something.
func TestSweepBoxDirs(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(parent, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	deadDir := fmt.Sprintf("outpost-%d", dead.Process.Pid)
	mk(deadDir + "/1")
	mk(deadDir + "/2")
	liveDir := fmt.Sprintf("outpost-%d", os.Getppid())
	mk(liveDir)
	ownDir := fmt.Sprintf("outpost-%d", os.Getpid())
	mk(ownDir)
	mk("outpost-agent")
	mk("other")
	busy := fmt.Sprintf("outpost-%d", 1<<22+1) // above pid_max's ceiling: never a process
	mk(busy + "/7")
	if err := os.WriteFile(filepath.Join(parent, busy, "7", "cgroup.procs"), nil, 0o644); err != nil {
		t.Fatal(err) // stands for a box that still holds a process
	}

	if n := sweepBoxDirs(parent); n != 1 {
		t.Errorf("removed %d directories, want 1", n)
	}
	for name, want := range map[string]bool{deadDir: false, liveDir: true, ownDir: true, "outpost-agent": true, "other": true, busy + "/7": true} {
		_, err := os.Stat(filepath.Join(parent, name))
		if got := err == nil; got != want {
			t.Errorf("%s left: %v, want %v", name, got, want)
		}
	}
}

// A process whose pid an agent killed earlier had finds that agent's
// directory of boxes: the boxes that hold nothing go, and its own box 1
// can be made.
func TestHoldBoxDirClearsAnEarlierPidsBoxes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("outpost-%d", os.Getpid()))
	for _, b := range []string{"1", "2"} {
		if err := os.MkdirAll(filepath.Join(dir, b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "3", "cgroup.procs"), nil, 0o644); err != nil {
		t.Fatal(err) // stands for a box that still holds a process
	}
	if err := holdBoxDir(dir); err != nil {
		t.Fatal(err)
	}
	defer dropBoxDir(dir)
	for b, want := range map[string]bool{"1": false, "2": false, "3": true} {
		_, err := os.Stat(filepath.Join(dir, b))
		if got := err == nil; got != want {
			t.Errorf("box %s left: %v, want %v", b, got, want)
		}
	}
}
