package proc

import (
	"os"
	"os/exec"
	"sync"
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
	// drainHardMax bounds the collection of output after exit even while a
	// pump waits for a slow reader.
	drainHardMax = 30 * time.Second
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

// process is one started process: its command, output log, stdin and state.
// One goroutine (supervise) owns its life; everyone else waits on exited
// and closed.
type process struct {
	id       string
	argv     []string
	tty      bool
	detached bool
	started  time.Time
	cmd      *exec.Cmd
	pid      int
	out      *outbuf
	in       *stdinWriter  // nil without stdin
	pty      *os.File      // the master, nil without a TTY
	term     chan struct{} // closed by terminate
	termOnce sync.Once

	mu       sync.Mutex
	exitedAt time.Time // zero while running
	exitCode int
	timedOut bool
	closedAt time.Time // zero until closed
	reaping  bool      // the leader is being reaped: never signal it

	exited chan struct{} // closed once the leader is reaped
	closed chan struct{} // closed once every stream ended
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

// signalLive sends sig to the process group unless the leader exited (or
// is being reaped), in which case it reports not_running: a signal never
// reaches a reused pid.
func (p *process) signalLive(sig os.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exitedAt.IsZero() || p.reaping {
		return notRunning(p.id)
	}
	if err := signalGroup(p.cmd.Process, sig); err != nil {
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
