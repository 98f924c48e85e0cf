package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
		var empty unix.Sigset_t
		if err := unix.PthreadSigmask(unix.SIG_SETMASK, &empty, nil); err != nil {
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

// inheritedMask reports whether the agent was started with signals
// blocked (the mask every thread it starts inherits, and with it every
// child: Go restores it in the child after fork); and the agent's binary
// to start the shim with.
var inheritedMask = sync.OnceValues(func() (bool, string) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cur unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, nil, &cur); err != nil {
		return false, ""
	}
	blocked := false
	for _, w := range cur.Val {
		blocked = blocked || w != 0
	}
	if !blocked {
		return false, ""
	}
	self, err := os.Executable()
	if err != nil {
		return false, ""
	}
	return true, self
})

// unblockChildSignals makes cmd start with an empty signal mask when the
// agent inherited a non-empty one: it then runs through the agent's own
// binary as a shim (one more exec), since Go gives a child its parent's
// startup mask and offers no way to clear it between fork and exec.
func unblockChildSignals(cmd *exec.Cmd) {
	blocked, self := inheritedMask()
	if !blocked {
		return
	}
	throughShim(cmd, self, sigResetEnv, "1")
}
