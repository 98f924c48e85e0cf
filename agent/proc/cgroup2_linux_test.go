package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cgroup2Own is this process's cgroup directory in the unified hierarchy.
func cgroup2Own(t *testing.T) string {
	t.Helper()
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	mnt, ok := mounts[unified]
	if !ok {
		t.Skipf("no cgroup2 hierarchy on this machine")
	}
	owns, err := ownCgroups()
	if err != nil || owns[unified] == "" {
		t.Fatalf("the agent's cgroup2 cgroup: %q, %v", owns[unified], err)
	}
	return filepath.Join(mnt, owns[unified])
}

// The mechanism reported is the one this machine allows, chosen in order
// cgroup2, cgroup1, rlimit: where the unified hierarchy lacks the memory or
// pids controller (bound to v1 hierarchies, as on a hybrid machine) the
// agent falls back, and says which controllers were missing.
func TestCgroup2FallsBackWithoutControllers(t *testing.T) {
	own := cgroup2Own(t)
	avail, err := readControllers(filepath.Join(own, "cgroup.controllers"))
	if err != nil {
		t.Fatal(err)
	}
	c2, v2err := newCgroup2()
	if c2 != nil {
		c2.close()
	}
	m, _ := newTestManager(t)
	got := m.LimitsBy()
	if avail["memory"] && avail["pids"] {
		if v2err != nil || got != LimitsByCgroup2 {
			t.Fatalf("controllers %v offered: newCgroup2 %v, LimitsBy %q; want cgroup2", avail, v2err, got)
		}
		return
	}
	if v2err == nil || !strings.Contains(v2err.Error(), "lacks the") {
		t.Fatalf("controllers %v: newCgroup2 = %v, want an error naming the missing ones", avail, v2err)
	}
	want := LimitsByRlimit
	if c, err := newCgroup1(); err == nil {
		c.close()
		want = LimitsByCgroup1
	}
	if got != want {
		t.Fatalf("LimitsBy = %q, want %q (cgroup2: %v)", got, want, v2err)
	}
	if _, err := os.Stat(filepath.Join(own, fmt.Sprintf("outpost-%d", os.Getpid()))); err == nil {
		t.Error("a failed cgroup2 setup left its directory")
	}
}

// cgroupOf is pid's cgroup in the unified hierarchy ("" when it is gone).
func cgroupOf(pid int) string {
	paths, err := cgroupsOf(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	return paths[unified]
}

// A box of the cgroup2 mechanism on this machine's unified hierarchy,
// through the Manager: the leader starts inside it (CLONE_INTO_CGROUP), so
// does what it forks, even a child that left the process group; closing
// the process kills that child too (cgroup.kill) and removes the box, and
// the Manager's Close removes the agent's directory of boxes. Without
// controllers (this machine) the box only groups and kills: no limit is
// written, and the mechanism reported is not cgroup2.
func TestCgroup2BoxStartsInsideAndKillsTheTree(t *testing.T) {
	own := cgroup2Own(t)
	name := fmt.Sprintf("outpost-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	c, err := newCgroup2At(own, name, nil)
	if err != nil {
		t.Skipf("cannot make a cgroup2 sub-cgroup here: %v", err)
	}
	t.Cleanup(func() { // a failed run leaves nothing behind
		boxes, _ := filepath.Glob(filepath.Join(c.dir, "*", "cgroup.kill"))
		for _, k := range boxes {
			os.WriteFile(k, []byte("1"), 0)
			for i := 0; i < 100 && len(cgroupPids(filepath.Dir(k))) > 0; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			os.Remove(filepath.Dir(k))
		}
		os.Remove(c.dir)
	})
	if c.mechanism() == LimitsByCgroup2 {
		t.Fatal("a box without the memory and pids controllers reported as cgroup2")
	}
	m, root := newTestManager(t)
	confineWith(m, c)
	m.resources = func() Resources { return Resources{Processes: 50} }
	id := start(t, m, StartRequest{Command: "setsid sleep 300 & echo $! > escaped; echo $$ > leader; exec sleep 300"})
	var leader, escaped int
	waitFor := func(name string, n *int) {
		deadline := time.Now().Add(generousWait)
		for time.Now().Before(deadline) {
			b, _ := os.ReadFile(filepath.Join(root, name))
			if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 {
				*n = v
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("%s pid not written", name)
	}
	waitFor("leader", &leader)
	waitFor("escaped", &escaped)
	rel, _ := filepath.Rel(mntOf(t), c.dir)
	box := cgroupOf(leader)
	if !strings.HasPrefix(box, "/"+rel+"/") {
		t.Fatalf("leader %d is in cgroup %q, want a box under /%s", leader, box, rel)
	}
	if got := cgroupOf(escaped); got != box {
		t.Fatalf("the child that left the group is in %q, want the leader's box %q", got, box)
	}
	// $! is known before the child has called setsid: wait for it.
	for deadline := time.Now().Add(generousWait); ; {
		if pg, _ := pgidOf(escaped); pg != leader {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the setsid child is still in the leader's process group")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := m.Terminate(id); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, m, id)
	deadline := time.Now().Add(generousWait)
	for alive(escaped) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(escaped) {
		t.Fatalf("the child %d that left the process group outlived its box", escaped)
	}
	if _, err := os.Stat(filepath.Join(mntOf(t), box)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the box %s is left: %v", box, err)
	}
	m.Close()
	if _, err := os.Stat(c.dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory of boxes %s is left: %v", c.dir, err)
	}
}

func mntOf(t *testing.T) string {
	mounts, err := cgroupMounts()
	if err != nil || mounts[unified] == "" {
		t.Fatalf("cgroup2 mount: %q, %v", mounts[unified], err)
	}
	return mounts[unified]
}

// pgidOf is pid's process group.
func pgidOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	return strconv.Atoi(f[2])
}
