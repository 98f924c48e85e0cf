//go:build unix

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The start shim: a command that must change between fork and exec in a
// way Go's os/exec cannot do for it (clear the signal mask, join the
// owner's cgroups, take rlimits) starts as the agent's own binary, which
// makes the changes to itself and then execs the command. Its markers'
// OUTPOST_ prefix keeps them from ever being inherited by commands
// otherwise; the shim removes them before the exec.
const (
	// sigResetEnv: clear the signal mask (see unblockChildSignals).
	sigResetEnv = ScrubbedPrefix + "PROC_UNBLOCK_SIGNALS"
	// cgroupsEnv: join each of these cgroup directories (one a line).
	cgroupsEnv = ScrubbedPrefix + "PROC_CGROUPS"
	// rlimitsEnv: take these rlimits ("as=N,nproc=N").
	rlimitsEnv = ScrubbedPrefix + "PROC_RLIMITS"
)

// shimEnvs are the markers of a start through the shim.
var shimEnvs = []string{sigResetEnv, cgroupsEnv, rlimitsEnv}

func init() {
	for _, k := range shimEnvs {
		if os.Getenv(k) != "" && len(os.Args) >= 3 {
			runShim(os.Args[1], os.Args[2:])
		}
	}
}

// runShim makes the changes its markers ask for to this process, then
// execs path with argv, leaving the markers out of its environment; it
// never returns. Any change it cannot make ends it with status 127 and a
// message: a command never runs without what was asked for.
func runShim(path string, argv []string) {
	runtime.LockOSThread()
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "outpost: %s: %v\n", what, err)
		os.Exit(127)
	}
	if os.Getenv(sigResetEnv) == "1" {
		if err := clearSignalMask(); err != nil {
			fail("unblock signals", err)
		}
	}
	if v := os.Getenv(cgroupsEnv); v != "" {
		for _, dir := range strings.Split(v, "\n") {
			// "0" is the writing process: all of this one's threads.
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0); err != nil {
				fail("join the owner's cgroup", err)
			}
		}
	}
	if v := os.Getenv(rlimitsEnv); v != "" {
		if err := setRlimits(v); err != nil {
			fail("take the owner's limits", err)
		}
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return slices.ContainsFunc(shimEnvs, func(k string) bool { return strings.HasPrefix(kv, k+"=") })
	})
	err := syscall.Exec(path, argv, env)
	fail("exec "+path, err)
}

// throughShim makes cmd start through the shim (once, however many
// changes it asks for) with the marker k=v.
func throughShim(cmd *exec.Cmd, self, k, v string) {
	if !slices.ContainsFunc(cmd.Env, func(kv string) bool {
		return slices.ContainsFunc(shimEnvs, func(m string) bool { return strings.HasPrefix(kv, m+"=") })
	}) {
		cmd.Args = append([]string{self, cmd.Path}, cmd.Args...)
		cmd.Path = self
	}
	cmd.Env = append(cmd.Env, k+"="+v)
}

// selfBinary is the agent's own binary, the shim.
var selfBinary = sync.OnceValues(os.Executable)

// setRlimits takes the rlimits of spec ("as=N,nproc=N"), the start
// shim's rlimitsEnv, for this process and what it execs.
func setRlimits(spec string) error {
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("rlimit %q: %w", kv, err)
		}
		res := map[string]int{"as": unix.RLIMIT_AS, "nproc": unix.RLIMIT_NPROC}
		r, ok := res[k]
		if !ok {
			return fmt.Errorf("rlimit %q: unknown", kv)
		}
		if err := unix.Setrlimit(r, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return fmt.Errorf("rlimit %s: %w", k, err)
		}
	}
	return nil
}

// rlimitSpec is the shim's rlimitsEnv value for r ("" for none): RLIMIT_AS
// for memory, RLIMIT_NPROC for processes. CPUPercent has no rlimit
// (RLIMIT_CPU bounds total seconds, not a share).
func rlimitSpec(r Resources) string {
	var lims []string
	if r.MemoryBytes > 0 {
		lims = append(lims, "as="+strconv.FormatInt(r.MemoryBytes, 10))
	}
	if r.Processes > 0 {
		lims = append(lims, "nproc="+strconv.Itoa(r.Processes))
	}
	return strings.Join(lims, ",")
}

// shimRlimits applies Resources as rlimits that the command takes itself
// through the start shim, before its exec: darwin's confiner (it has no
// prlimit to set them from outside).
type shimRlimits struct{}

func (shimRlimits) mechanism() string { return LimitsByRlimit }

func (shimRlimits) prepare(cmd *exec.Cmd, r Resources) (box, error) {
	if spec := rlimitSpec(r); spec != "" {
		self, err := selfBinary()
		if err != nil {
			return nil, fmt.Errorf("proc: rlimit: the agent's own binary: %w", err)
		}
		throughShim(cmd, self, rlimitsEnv, spec)
	}
	return noBox{}, nil
}

// noBox: the command took its limits before it ran; nothing to place or
// release.
type noBox struct{}

func (noBox) place(int) error { return nil }
func (noBox) release()        {}
