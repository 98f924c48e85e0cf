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

// signals is what Windows can do: kill.
var signals = map[string]os.Signal{"KILL": os.Kill}

// termSignal ends a process; Windows has no TERM to send, group.signal
// kills.
var termSignal = os.Kill

// hangupSignal ends a process started with Hangup when its last reader is
// gone: Windows has no SIGHUP, and a console's close ends its programs.
var hangupSignal = os.Kill
