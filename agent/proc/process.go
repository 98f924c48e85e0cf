package proc

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Process defaults, as API.md states them.
const (
	// DefaultReaderGrace is how long a reader counts as attached after its
	// last read (and from the start).
	DefaultReaderGrace = 30 * time.Second
	// DefaultRetain is how long a closed process stays readable.
	DefaultRetain = 5 * time.Minute
	// DefaultTermGrace is how long terminate waits after TERM before KILL.
	DefaultTermGrace = 5 * time.Second
	// DefaultBufferBytes and DefaultBufferChunks bound a process's retained
	// output; an attached reader may hold a quarter of them unacknowledged.
	DefaultBufferBytes  = 32 << 20
	DefaultBufferChunks = 16384
	// maxWriteIDs is how many stdin write ids a process remembers.
	maxWriteIDs = 4096
)

// StartRequest starts a streaming process.
type StartRequest struct {
	// ID names the process; empty picks one.
	ID string
	// Argv or Command, Cwd and Env as for ExecRequest.
	Argv    []string
	Command string
	Cwd     string
	Env     map[string]string
	// TTY runs the process on a pseudo-terminal of Cols × Rows (default
	// 80 × 24); its output is one stream, "pty".
	TTY        bool
	Cols, Rows int
	// Stdin gives the process a stdin pipe fed by Write; a TTY always has one.
	Stdin bool
	// Detached never makes the process wait for a reader.
	Detached bool
	// Hangup sends SIGHUP to the process group once no reader has been
	// attached for longer than the reader grace, as an ssh session's end
	// does; once. Ignored for a detached process.
	Hangup bool
	// Timeout kills the group after this long (exit code 124); 0 is none.
	Timeout time.Duration
}

// Info describes one process.
type Info struct {
	ID        string
	PID       int
	Argv      []string
	TTY       bool
	Detached  bool
	Running   bool
	ExitCode  *int
	TimedOut  bool
	Closed    bool
	StartedAt time.Time
	ExitedAt  time.Time
}

// Why a process is stopped: the cause its context is cancelled with. A
// terminate is graceful (TERM, KILL after the grace); every other cause
// (errTimedOut, errClosed, the end of an Exec's context) kills at once.
var (
	errTerminated = errors.New("process terminated")
	errTimedOut   = errors.New("process timed out")
)

// sink takes a process's output and events: an *outbuf for a streaming
// process, a *capture for an Exec.
type sink interface {
	// admit returns once the sink takes more output, or stop is closed.
	admit(stop <-chan struct{})
	// waiting reports whether a pump waits in admit now.
	waiting() bool
	// write takes one read's output; p is reused after it returns.
	write(s stream, p []byte)
	exit(code int, timedOut bool)
	close()
}

// process is one started process, an Exec's or a streaming one, from start
// to closed (see lifecycle.go). The supervisor owns its life; one goroutine
// (wait) calls cmd.Wait; everyone else waits on exited and closed.
type process struct {
	id       string // empty for an Exec
	argv     []string
	tty      bool
	detached bool
	hangup   bool // see StartRequest.Hangup
	started  time.Time
	cmd      *exec.Cmd
	pid      int
	group    group // what a kill reaches
	log      *slog.Logger
	grace    time.Duration // from a graceful stop's TERM to KILL
	sink     sink
	out      *outbuf      // a streaming process's sink, nil for an Exec
	io       *stdio       // its files
	in       *stdinWriter // nil without stdin
	stop     context.CancelCauseFunc

	lastOut  atomic.Int64  // when output last came or a pump was let go, Unix ns
	stopWait chan struct{} // closed when pumps must stop waiting for a reader
	stopOnce sync.Once

	mu        sync.Mutex
	stopCause error     // why it was stopped while running; nil if it ended alone
	exitedAt  time.Time // zero while running
	exitCode  int
	timedOut  bool
	waitErr   error     // cmd.Wait's when the exit status is unknown
	closedAt  time.Time // zero until closed

	exited chan struct{} // closed once the leader exited
	killed chan struct{} // closed once the rest of the group was killed
	reaped chan struct{} // closed once cmd.Wait returned
	box    box           // the owner's limits on the tree; nil for none
	closed chan struct{} // closed once the group is gone and every stream ended
}

// info is the process's Info now.
func (p *process) info() Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := Info{
		ID: p.id, PID: p.pid, Argv: p.argv, TTY: p.tty, Detached: p.detached,
		Running: p.exitedAt.IsZero(), TimedOut: p.timedOut, Closed: !p.closedAt.IsZero(),
		StartedAt: p.started, ExitedAt: p.exitedAt,
	}
	if !p.exitedAt.IsZero() {
		code := p.exitCode
		in.ExitCode = &code
	}
	return in
}

// signalLive sends sig to the process group unless the leader exited, in
// which case it reports not_running.
func (p *process) signalLive(sig os.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exitedAt.IsZero() {
		return notRunning(p.id)
	}
	if err := p.group.signal(sig); err != nil {
		return wire.Errorf(wire.CodeInternal, "", "signal process %s: %v", p.id, err)
	}
	return nil
}

// running reports whether the leader has not exited.
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitedAt.IsZero()
}

// closedSince is when the process closed, or the zero time.
func (p *process) closedSince() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closedAt
}

func notRunning(id string) error {
	return wire.Errorf(wire.CodeConflict, wire.ReasonNotRunning, "process %s is not running", id)
}
