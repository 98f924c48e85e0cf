//go:build unix

package proc

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// inheritedIgnorable are the signals the Go runtime leaves ignored when the
// agent was started with them ignored (nohup ignores HUP; a shell without
// job control starts a background command with INT ignored). For every
// other signal the runtime installs its own handler, which exec resets to
// the default in the child.
var inheritedIgnorable = []os.Signal{syscall.SIGHUP, syscall.SIGINT}

var defaultChildSignals sync.Once

// resetChildSignals makes the processes the agent starts begin with the
// default disposition of HUP and INT, whatever the agent inherited: an
// ignored signal stays ignored across exec, so under nohup `signal HUP`
// would do nothing. For each such signal it has the runtime catch it (the
// kernel resets a caught signal to its default in an exec'd child) into a
// channel nobody reads: a full buffered channel drops what follows, so the
// agent itself goes on not reacting to it. Once per process.
func resetChildSignals() {
	defaultChildSignals.Do(func() {
		var ignored []os.Signal
		for _, sig := range inheritedIgnorable {
			if signal.Ignored(sig) {
				ignored = append(ignored, sig)
			}
		}
		if len(ignored) > 0 {
			signal.Notify(make(chan os.Signal, 1), ignored...)
		}
	})
}
