package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// newConfiner picks cgroup v2 where the agent may make a sub-cgroup with
// the memory and pids controllers, else cgroups v1 where it may make them,
// else rlimits.
func newConfiner() confiner {
	if c, err := newCgroup2(); err == nil {
		return c
	}
	if c, err := newCgroup1(); err == nil {
		return c
	}
	return rlimits{}
}

// cgroup1 makes one cgroup per process tree in each of the pids, memory
// and cpu hierarchies, under the agent's own: DIR/outpost-<agent pid>/<n>.
type cgroup1 struct {
	dirs   map[string]string // controller → the agent's directory of boxes
	closed sync.Once
}

// boxSeq names the boxes of every Manager of this process, which share
// the directory outpost-<pid> (two agents of one process both made box 1).
var boxSeq atomic.Uint64

// cgroup1Controllers are the controllers a box uses; cgroup1Needed those
// it cannot do without (cpu is used where the agent may write it).
var (
	cgroup1Controllers = []string{"pids", "memory", "cpu"}
	cgroup1Needed      = []string{"pids", "memory"}
)

// swept holds the parents whose leftover directories of boxes this process
// has removed (sweepBoxDirs), once each.
var swept sync.Map

// newCgroup1 readies the agent's directory of boxes in each v1 hierarchy.
// It fails, so that the caller falls back to rlimits, unless it may make
// them in both the pids and the memory hierarchies: a process or memory
// limit the policy asks for is never left out without a word (cpu, a
// bound of cgroups only, is applied where the agent may write it).
func newCgroup1() (*cgroup1, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	paths, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	c := &cgroup1{dirs: map[string]string{}}
	var failed []string
	for _, ctl := range cgroup1Controllers {
		mnt, ok1 := mounts[ctl]
		p, ok2 := paths[ctl]
		if !ok1 || !ok2 {
			failed = append(failed, ctl+": not mounted")
			continue
		}
		parent := filepath.Join(mnt, p)
		if _, done := swept.LoadOrStore(parent, true); !done {
			sweepBoxDirs(parent)
		}
		dir := filepath.Join(parent, fmt.Sprintf("outpost-%d", os.Getpid()))
		if err := holdBoxDir(dir); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", ctl, err))
			continue
		}
		c.dirs[ctl] = dir
	}
	for _, ctl := range cgroup1Needed {
		if c.dirs[ctl] == "" {
			c.close()
			return nil, fmt.Errorf("proc: no writable cgroup v1 %s hierarchy (%s)", strings.Join(cgroup1Needed, " and "), strings.Join(failed, "; "))
		}
	}
	return c, nil
}

// unified is the key of the cgroup v2 (unified) hierarchy in what
// cgroupMounts and ownCgroups return; v1 hierarchies are keyed by their
// controllers.
const unified = ""

// cgroupMounts maps each v1 controller, and unified, to its mount point
// (/proc/self/mountinfo).
func cgroupMounts() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		switch {
		case !ok || len(fields) < 5 || len(tail) < 1:
		case tail[0] == "cgroup2":
			if _, seen := out[unified]; !seen {
				out[unified] = fields[4]
			}
		case tail[0] == "cgroup" && len(tail) >= 3:
			for _, opt := range strings.Split(tail[2], ",") {
				out[opt] = fields[4]
			}
		}
	}
	return out, sc.Err()
}

// ownCgroups maps each v1 controller, and unified (the "0::" line), to the
// agent's cgroup path in its hierarchy (/proc/self/cgroup).
func ownCgroups() (map[string]string, error) { return cgroupsOf("/proc/self/cgroup") }

// cgroupsOf is ownCgroups for the process whose /proc/PID/cgroup file is
// name.
func cgroupsOf(name string) (map[string]string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		switch {
		case len(parts) != 3:
		case parts[0] == "0" && parts[1] == "":
			out[unified] = parts[2]
		case parts[1] != "":
			for _, ctl := range strings.Split(parts[1], ",") {
				out[ctl] = parts[2]
			}
		}
	}
	return out, nil
}

func (c *cgroup1) mechanism() string { return LimitsByCgroup1 }

// close lets go of the agent's directories: the process's last Manager
// to close removes them.
func (c *cgroup1) close() {
	c.closed.Do(func() {
		for _, d := range c.dirs {
			dropBoxDir(d)
		}
	})
}

func (c *cgroup1) prepare(cmd *exec.Cmd, r Resources) (box, error) {
	n := boxSeq.Add(1)
	b := &cgroupBox{}
	set := func(ctl string, files map[string]string) error {
		base := c.dirs[ctl]
		if base == "" {
			return nil // cpu, where the agent may not write it: a bound of cgroups only (Resources)
		}
		dir := filepath.Join(base, strconv.FormatUint(n, 10))
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, os.ErrNotExist) {
			// Removed under us: by another agent's sweep that took our
			// pid for a dead one (another pid namespace). Made again.
			if err = os.Mkdir(base, 0o755); err == nil || errors.Is(err, os.ErrExist) {
				err = os.Mkdir(dir, 0o755)
			}
		}
		if err != nil {
			return err
		}
		b.dirs = append(b.dirs, dir)
		for _, name := range []string{"cpu.cfs_period_us", "cpu.cfs_quota_us", "pids.max", "memory.limit_in_bytes"} {
			if v, ok := files[name]; ok {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
		}
		return nil
	}
	var err error
	if r.Processes > 0 {
		err = set("pids", map[string]string{"pids.max": strconv.Itoa(r.Processes)})
	}
	if err == nil && r.MemoryBytes > 0 {
		err = set("memory", map[string]string{"memory.limit_in_bytes": strconv.FormatInt(r.MemoryBytes, 10)})
	}
	if err == nil && r.CPUPercent > 0 {
		err = set("cpu", map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": strconv.Itoa(r.CPUPercent * 1000)})
	}
	if err != nil {
		b.release()
		return nil, fmt.Errorf("proc: cgroup: %w", err)
	}
	if len(b.dirs) > 0 {
		// The command joins them itself, before it execs: placed from
		// here after the start, a leader could fork before it is in
		// them (seen: a fork bomb under load escaped pids.max).
		self, err := selfBinary()
		if err != nil {
			b.release()
			return nil, fmt.Errorf("proc: cgroup: the agent's own binary: %w", err)
		}
		throughShim(cmd, self, cgroupsEnv, strings.Join(b.dirs, "\n"))
	}
	return b, nil
}

// cgroupBox is one tree's cgroups, one per controller.
type cgroupBox struct{ dirs []string }

// place makes sure the leader is in each cgroup; it joined them itself
// before its exec (the start shim), so this only checks it is there.
func (b *cgroupBox) place(pid int) error {
	for _, d := range b.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("proc: cgroup: %w", err)
		}
	}
	return nil
}

// release kills every process left in the cgroups (those that left the
// process group too) and removes them.
func (b *cgroupBox) release() {
	for _, d := range b.dirs {
		for range 50 {
			pids := cgroupPids(d)
			if len(pids) == 0 {
				break
			}
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
			}
			time.Sleep(10 * time.Millisecond)
		}
		os.Remove(d)
	}
}

func cgroupPids(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// rlimits bound each started leader with prlimit: its address space, and
// the processes of the agent's user (RLIMIT_NPROC counts all of the user's
// processes, and root ignores it).
type rlimits struct{}

func (rlimits) mechanism() string { return LimitsByRlimit }

func (rlimits) prepare(cmd *exec.Cmd, r Resources) (box, error) {
	var lims []string
	if r.MemoryBytes > 0 {
		lims = append(lims, "as="+strconv.FormatInt(r.MemoryBytes, 10))
	}
	if r.Processes > 0 {
		lims = append(lims, "nproc="+strconv.Itoa(r.Processes))
	}
	if len(lims) > 0 {
		// Taken by the command itself before its exec, so nothing it
		// starts escapes them (see cgroup1.prepare).
		self, err := selfBinary()
		if err != nil {
			return nil, fmt.Errorf("proc: rlimit: the agent's own binary: %w", err)
		}
		throughShim(cmd, self, rlimitsEnv, strings.Join(lims, ","))
	}
	return rlimitBox(r), nil
}

type rlimitBox Resources

func (b rlimitBox) place(pid int) error {
	if b.MemoryBytes > 0 {
		lim := unix.Rlimit{Cur: uint64(b.MemoryBytes), Max: uint64(b.MemoryBytes)}
		if err := unix.Prlimit(pid, unix.RLIMIT_AS, &lim, nil); err != nil {
			return fmt.Errorf("proc: rlimit: %w", err)
		}
	}
	if b.Processes > 0 {
		lim := unix.Rlimit{Cur: uint64(b.Processes), Max: uint64(b.Processes)}
		if err := unix.Prlimit(pid, unix.RLIMIT_NPROC, &lim, nil); err != nil {
			return fmt.Errorf("proc: rlimit: %w", err)
		}
	}
	return nil
}

func (rlimitBox) release() {}
