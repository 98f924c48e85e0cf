package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cgroup2 makes one cgroup per process tree in the unified hierarchy,
// under the agent's own cgroup: OWN/outpost-<agent pid>/<n>, with
// memory.max (and memory.swap.max 0), pids.max and cpu.max. The leader is
// started inside it (CLONE_INTO_CGROUP), so nothing it forks escapes, and
// cgroup.kill empties it. This is what a systemd user service with a
// delegated subtree (Delegate=yes) allows.
type cgroup2 struct {
	dir    string          // OWN/outpost-<pid>: the agent's directory of boxes, held (holdBoxDir)
	ctl    map[string]bool // controllers enabled for the boxes
	closed sync.Once
}

// cgroup2Limits are the controllers a box needs for the policy's limits;
// cpu is used when the hierarchy offers it.
var cgroup2Limits = []string{"memory", "pids"}

// newCgroup2 finds the unified hierarchy and the agent's cgroup in it and
// readies a directory of boxes there, with the memory and pids
// controllers (and cpu when offered) enabled for it. It fails, so that the
// caller falls back, when there is no cgroup2 mount, the agent may not
// write its cgroup, or the controllers are not available (a hybrid
// machine whose controllers are bound to v1 hierarchies).
func newCgroup2() (*cgroup2, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	owns, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	mnt, ok1 := mounts[unified]
	own, ok2 := owns[unified]
	switch {
	case !ok1:
		return nil, errors.New("proc: no cgroup2 hierarchy is mounted")
	case !ok2:
		return nil, errors.New("proc: the agent is in no cgroup2 cgroup")
	}
	return newCgroup2At(filepath.Join(mnt, own), fmt.Sprintf("outpost-%d", os.Getpid()), cgroup2Limits)
}

// newCgroup2At readies the directory of boxes name under the cgroup own,
// with the controllers need enabled for it (and cpu when offered); need
// may be empty (boxes that only group and kill).
func newCgroup2At(own, name string, need []string) (*cgroup2, error) {
	avail, err := readControllers(filepath.Join(own, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, c := range need {
		if !avail[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		have := make([]string, 0, len(avail))
		for c := range avail {
			have = append(have, c)
		}
		slices.Sort(have)
		return nil, fmt.Errorf("proc: cgroup2 %s lacks the %s controller(s) (has: %s)", own, strings.Join(missing, ", "), strings.Join(have, " "))
	}
	want := slices.Clone(need)
	if len(need) > 0 && avail["cpu"] {
		want = append(want, "cpu")
	}
	if err := enableControllers(own, want); err != nil {
		return nil, err
	}
	c := &cgroup2{dir: filepath.Join(own, name), ctl: map[string]bool{}}
	// Another Manager of this process may have made it: boxes are named
	// by a counter of the process (boxSeq).
	if err := holdBoxDir(c.dir); err != nil {
		return nil, fmt.Errorf("proc: cgroup2: %w", err)
	}
	if len(want) > 0 {
		if err := writeSubtree(c.dir, want); err != nil {
			c.close()
			return nil, err
		}
	}
	for _, w := range want {
		c.ctl[w] = true
	}
	return c, nil
}

// readControllers reads a cgroup.controllers (or subtree_control) file.
func readControllers(name string) (map[string]bool, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("proc: cgroup2: %w", err)
	}
	out := map[string]bool{}
	for _, c := range strings.Fields(string(b)) {
		out[c] = true
	}
	return out, nil
}

// writeSubtree enables controllers for the children of dir.
func writeSubtree(dir string, ctl []string) error {
	var b strings.Builder
	for i, c := range ctl {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("+" + c)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(b.String()), 0); err != nil {
		return fmt.Errorf("proc: cgroup2: enable %s in %s: %w", b.String(), dir, err)
	}
	return nil
}

// enableControllers enables ctl for the children of own, the agent's
// cgroup. A cgroup other than the root may not both hold processes and
// hand controllers to children, so when own holds processes (the agent
// itself, as a service's cgroup does) they move first into a leaf,
// own/outpost-agent.
func enableControllers(own string, ctl []string) error {
	if len(ctl) == 0 {
		return nil
	}
	on, err := readControllers(filepath.Join(own, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(ctl, func(c string) bool { return !on[c] }) {
		return nil
	}
	err = writeSubtree(own, ctl)
	if err == nil || !errors.Is(err, syscall.EBUSY) {
		return err
	}
	leaf := filepath.Join(own, "outpost-agent")
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("proc: cgroup2: %w", err)
	}
	for _, pid := range cgroupPids(own) {
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("proc: cgroup2: move %d to %s: %w", pid, leaf, err)
		}
	}
	return writeSubtree(own, ctl)
}

func (c *cgroup2) mechanism() string {
	if c.ctl["memory"] && c.ctl["pids"] {
		return LimitsByCgroup2
	}
	return LimitsByNone
}

// close lets go of the agent's directory of boxes: the process's last
// Manager to close removes it.
func (c *cgroup2) close() {
	c.closed.Do(func() { dropBoxDir(c.dir) })
}

// prepare makes the tree's cgroup with its limits and has cmd start in
// it: the cgroup's directory is handed to clone (CLONE_INTO_CGROUP).
func (c *cgroup2) prepare(cmd *exec.Cmd, r Resources) (box, error) {
	dir := filepath.Join(c.dir, strconv.FormatUint(boxSeq.Add(1), 10))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("proc: cgroup2: %w", err)
	}
	b := &cgroup2Box{dir: dir, fd: -1}
	fail := func(err error) (box, error) {
		b.release()
		return nil, fmt.Errorf("proc: cgroup2: %w", err)
	}
	for _, f := range c.files(r) {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0); err != nil {
			return fail(fmt.Errorf("%s: %w", f[0], err))
		}
	}
	fd, err := syscall.Open(dir, syscall.O_DIRECTORY|syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	b.fd = fd
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	return b, nil
}

// files are the limit files of r, as name and value, for the controllers
// enabled (memory.swap.max only where swap is accounted).
func (c *cgroup2) files(r Resources) [][2]string {
	var out [][2]string
	if r.MemoryBytes > 0 && c.ctl["memory"] {
		out = append(out, [2]string{"memory.max", strconv.FormatInt(r.MemoryBytes, 10)})
		if _, err := os.Stat(filepath.Join(c.dir, "memory.swap.max")); err == nil {
			out = append(out, [2]string{"memory.swap.max", "0"})
		}
	}
	if r.Processes > 0 && c.ctl["pids"] {
		out = append(out, [2]string{"pids.max", strconv.Itoa(r.Processes)})
	}
	if r.CPUPercent > 0 && c.ctl["cpu"] {
		out = append(out, [2]string{"cpu.max", strconv.Itoa(r.CPUPercent*1000) + " 100000"})
	}
	return out
}

// cgroup2Box is one tree's cgroup.
type cgroup2Box struct {
	dir string
	fd  int // the directory, open until the leader started
}

// place: the leader started in the cgroup; the directory is let go.
func (b *cgroup2Box) place(int) error {
	b.closeFD()
	return nil
}

func (b *cgroup2Box) closeFD() {
	if b.fd >= 0 {
		syscall.Close(b.fd)
		b.fd = -1
	}
}

// release kills everything left in the cgroup (cgroup.kill, or SIGKILL to
// each process where the kernel predates it), waits for it to empty and
// removes it.
func (b *cgroup2Box) release() {
	b.closeFD()
	killed := os.WriteFile(filepath.Join(b.dir, "cgroup.kill"), []byte("1"), 0) == nil
	for range 200 {
		pids := cgroupPids(b.dir)
		if len(pids) == 0 {
			break
		}
		if !killed {
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Remove(b.dir)
}
