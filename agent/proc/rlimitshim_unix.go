//go:build unix

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// shimName is argv[0] of the agent's own binary run as the limits shim: a
// command starts as this shim, which puts itself under the limits (joins
// the tree's cgroups, sets rlimits) and then execs the command in its
// place (same pid, process group and terminal). The limits are in force
// before the command's first instruction: nothing it forks escapes them,
// and where they cannot be set (darwin has no prlimit) they still apply.
const shimName = "outpost-rlimit-shim"

// The shim runs before anything else of the binary: package initialization.
func init() {
	if len(os.Args) >= 2 && os.Args[0] == shimName {
		os.Exit(runShim(os.Args[1:]))
	}
}

// shimSpec is what the shim applies to itself.
type shimSpec struct {
	mem, nproc int64    // RLIMIT_AS and RLIMIT_NPROC; 0 is none
	cgroups    []string // cgroup directories whose cgroup.procs it joins
}

// args encodes s and the command (path, argv) for the shim.
func (s shimSpec) args(path string, argv []string) []string {
	out := []string{shimName, strconv.FormatInt(s.mem, 10), strconv.FormatInt(s.nproc, 10), strconv.Itoa(len(s.cgroups))}
	out = append(out, s.cgroups...)
	out = append(out, path)
	return append(out, argv...)
}

// runShim applies the spec in args and execs the command. It only returns
// on failure, with 126 (cannot run), after saying why: a command never
// runs without the limits it was given.
func runShim(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, shimName+": "+format+"\n", a...)
		return 126
	}
	if len(args) < 4 {
		return fail("too few arguments")
	}
	mem, err1 := strconv.ParseUint(args[0], 10, 64)
	nproc, err2 := strconv.ParseUint(args[1], 10, 64)
	n, err3 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil || err3 != nil || n < 0 || len(args) < 3+n+2 {
		return fail("bad arguments %q", args)
	}
	cgroups, rest := args[3:3+n], args[3+n:]
	self := []byte(strconv.Itoa(os.Getpid()))
	for _, dir := range cgroups {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), self, 0); err != nil {
			return fail("cannot join cgroup %s: %v", dir, err)
		}
	}
	for _, l := range []struct {
		res  int
		name string
		v    uint64
	}{{unix.RLIMIT_NPROC, "processes (RLIMIT_NPROC)", nproc}, {unix.RLIMIT_AS, "memory (RLIMIT_AS)", mem}} {
		if l.v == 0 {
			continue
		}
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.v, Max: l.v}); err != nil {
			return fail("cannot limit %s to %d: %v", l.name, l.v, err)
		}
	}
	err := unix.Exec(rest[0], rest[1:], os.Environ())
	return fail("exec %s: %v", rest[0], err)
}

// shimWrap makes cmd start as the shim applying s: this binary, which
// then execs cmd's program with cmd's argv.
func shimWrap(cmd *exec.Cmd, s shimSpec) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("proc: limits shim: %w", err)
	}
	cmd.Args = s.args(cmd.Path, cmd.Args)
	cmd.Path = self
	return nil
}

// shimRlimits applies Resources as rlimits through the shim (darwin's
// confiner, and Linux's where it may make no cgroups): RLIMIT_AS for
// memory, RLIMIT_NPROC for processes. CPUPercent has no rlimit
// (RLIMIT_CPU bounds total seconds, not a share) and is not applied.
type shimRlimits struct{}

func (shimRlimits) mechanism() string { return LimitsByRlimit }

func (shimRlimits) prepare(cmd *exec.Cmd, r Resources) (box, error) {
	if err := shimWrap(cmd, shimSpec{mem: max(r.MemoryBytes, 0), nproc: int64(max(r.Processes, 0))}); err != nil {
		return nil, err
	}
	return noBox{}, nil
}

// noBox: the limits were set by the shim before the command ran; nothing
// to place or release.
type noBox struct{}

func (noBox) place(int) error { return nil }
func (noBox) release()        {}
