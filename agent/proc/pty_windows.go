package proc

import (
	"errors"
	"os"
	"os/exec"
)

// PTYSupported reports whether processes can run on a pseudo-terminal here.
const PTYSupported = false

var errNoPTY = errors.New("pseudo-terminals are not supported on windows")

// attachPTY is unsupported on Windows.
func attachPTY(*exec.Cmd, int, int) (master, slave *os.File, err error) {
	return nil, nil, errNoPTY
}

// resizePTY is unsupported on Windows.
func resizePTY(*os.File, int, int) error { return errNoPTY }

// isPTYEnd is never true: there are no pseudo-terminals here.
func isPTYEnd(error) bool { return false }

// signals is what Windows can do: kill.
var signals = map[string]os.Signal{"KILL": os.Kill}

// termSignal ends a process; Windows has no TERM to send.
var termSignal = os.Kill

// signalGroup kills p (Windows has no group signals here).
func signalGroup(p *os.Process, _ os.Signal) error {
	return killGroup(p)
}
