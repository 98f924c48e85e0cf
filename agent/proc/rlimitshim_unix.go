//go:build unix

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"golang.org/x/sys/unix"
)

// shimName is argv[0] of the agent's own binary run as the rlimit shim:
// where rlimits cannot be set on another process (darwin has no prlimit),
// a command starts as this shim, which sets them on itself and execs the
// command in its place (same pid, same process group and terminal).
const shimName = "outpost-rlimit-shim"

// The shim runs before anything else of the binary: package initialization.
func init() {
	if len(os.Args) >= 5 && os.Args[0] == shimName {
		os.Exit(runShim(os.Args[1:]))
	}
}

// runShim sets the address-space and process-count limits args[0] and
// args[1] (0: none) and execs args[2] with argv args[3:]. It only returns
// on failure, with 126 (cannot run), after saying why: a command never
// runs without the limits it was given.
func runShim(args []string) int {
	mem, err1 := strconv.ParseUint(args[0], 10, 64)
	nproc, err2 := strconv.ParseUint(args[1], 10, 64)
	if err1 != nil || err2 != nil {
		fmt.Fprintf(os.Stderr, "%s: bad limits %q %q\n", shimName, args[0], args[1])
		return 126
	}
	for _, l := range []struct {
		res  int
		name string
		v    uint64
	}{{unix.RLIMIT_AS, "memory (RLIMIT_AS)", mem}, {unix.RLIMIT_NPROC, "processes (RLIMIT_NPROC)", nproc}} {
		if l.v == 0 {
			continue
		}
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.v, Max: l.v}); err != nil {
			fmt.Fprintf(os.Stderr, "%s: cannot limit %s to %d: %v\n", shimName, l.name, l.v, err)
			return 126
		}
	}
	err := unix.Exec(args[2], args[3:], os.Environ())
	fmt.Fprintf(os.Stderr, "%s: exec %s: %v\n", shimName, args[2], err)
	return 126
}

// shimWrap makes cmd start as the rlimit shim: this binary, which sets
// r's memory (RLIMIT_AS) and process (RLIMIT_NPROC) limits on itself and
// execs cmd's program with cmd's argv. CPUPercent has no rlimit (RLIMIT_CPU
// bounds total seconds, not a share) and is not applied.
func shimWrap(cmd *exec.Cmd, r Resources) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("proc: rlimit shim: %w", err)
	}
	args := []string{shimName, strconv.FormatInt(max(r.MemoryBytes, 0), 10), strconv.Itoa(max(r.Processes, 0)), cmd.Path}
	cmd.Args = append(args, cmd.Args...)
	cmd.Path = self
	return nil
}

// shimRlimits applies Resources with the rlimit shim (darwin's confiner).
type shimRlimits struct{}

func (shimRlimits) mechanism() string { return LimitsByRlimit }

func (shimRlimits) prepare(cmd *exec.Cmd, r Resources) (box, error) {
	if err := shimWrap(cmd, r); err != nil {
		return nil, err
	}
	return noBox{}, nil
}

// noBox: the limits were set by the shim before the command ran; nothing
// to place or release.
type noBox struct{}

func (noBox) place(int) error { return nil }
func (noBox) release()        {}
