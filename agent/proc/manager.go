package proc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Config is what a Manager needs.
type Config struct {
	// Root is the absolute directory the agent serves. It must exist and be a
	// directory; every process runs in it or below it.
	Root string
	// Logger receives debug records about started and finished processes.
	// Nil discards them.
	Logger *slog.Logger
	// ReaderGrace is how long a streaming process's reader counts as
	// attached after its last read; zero means DefaultReaderGrace.
	ReaderGrace time.Duration
	// Retain is how long a closed process stays readable; zero means
	// DefaultRetain.
	Retain time.Duration
	// TermGrace is how long Terminate waits after TERM before KILL; zero
	// means DefaultTermGrace.
	TermGrace time.Duration
	// BufferBytes bounds each process's retained output (at least 1 MiB is
	// sensible); zero means DefaultBufferBytes.
	BufferBytes int
	// MaxProcesses bounds the processes alive at once, Exec runs and
	// streaming processes together: each holds a slot from its start until
	// its process group is gone. Beyond it, Exec and Start fail with
	// unavailable/busy. Zero means DefaultMaxProcesses.
	MaxProcesses int
	// Resources, when set, is asked at every start for the bounds of the
	// new process tree (the owner's policy, which may change); a start
	// that cannot be bounded as asked fails.
	Resources func() Resources
}

// DefaultMaxProcesses is the default of Config.MaxProcesses.
const DefaultMaxProcesses = 256

// Manager starts processes confined to a root and kills what is left of them.
// Its methods are safe for concurrent use.
type Manager struct {
	root     string // Root as configured, cleaned
	realRoot string // Root with symlinks evaluated
	log      *slog.Logger

	// closing is cancelled with errClosed by Close, which stops every
	// process.
	closing context.Context
	cancel  context.CancelCauseFunc

	mu       sync.Mutex
	closed   bool
	live     int // slots held: Exec runs and streaming processes
	maxProcs int // Config.MaxProcesses

	lim       limits        // of every streaming process's output
	retain    time.Duration // Config.Retain
	termGrace time.Duration // Config.TermGrace
	procs     map[string]*process
	order     []string       // streaming process ids by start
	procWG    sync.WaitGroup // supervisors of every process

	resources func() Resources // Config.Resources
	confine   confiner
}

// errClosed is the cause of the stop of processes the Manager's Close ends.
var errClosed = errors.New("process manager closed")

// NewManager validates cfg and returns a Manager serving cfg.Root.
func NewManager(cfg Config) (*Manager, error) {
	if !filepath.IsAbs(cfg.Root) {
		return nil, fmt.Errorf("proc: root %q is not absolute", cfg.Root)
	}
	root := filepath.Clean(cfg.Root)
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("proc: root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("proc: root %q is not a directory", root)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("proc: root: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	resetChildSignals()
	closing, cancel := context.WithCancelCause(context.Background())
	return &Manager{
		root: root, realRoot: real, log: log, closing: closing, cancel: cancel,
		lim: newLimits(cfg.BufferBytes, cfg.ReaderGrace), retain: orDefault(cfg.Retain, DefaultRetain),
		termGrace: orDefault(cfg.TermGrace, DefaultTermGrace), procs: map[string]*process{},
		maxProcs:  cmp.Or(max(cfg.MaxProcesses, 0), DefaultMaxProcesses),
		resources: cfg.Resources, confine: newConfiner(),
	}, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Close kills the process group of every Exec and streaming process still
// running and waits for those processes to close; a running Exec fails with
// an unavailable error, and so does every later call. Close is idempotent and
// always returns nil.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel(errClosed)
	m.procWG.Wait()
	if c, ok := m.confine.(interface{ close() }); ok {
		c.close() // the agent's own cgroups, empty now
	}
	return nil
}

// takeSlotLocked claims a slot for a process about to start, with m.mu
// held; none free is unavailable/busy.
func (m *Manager) takeSlotLocked() error {
	if m.live >= m.maxProcs {
		return wire.Errorf(wire.CodeUnavailable, wire.ReasonBusy,
			"the agent runs %d processes, its limit; retry when one has ended", m.maxProcs)
	}
	m.live++
	return nil
}

// freeSlot gives back a slot once its process group is gone.
func (m *Manager) freeSlot() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live--
}

func closedError() error {
	return wire.Errorf(wire.CodeUnavailable, "", "process manager closed")
}

// stopError maps why an Exec was stopped (the cause of its context) to a
// wire error.
func stopError(cause error) error {
	switch {
	case errors.Is(cause, errClosed):
		return closedError()
	case errors.Is(cause, context.DeadlineExceeded):
		return wire.Errorf(wire.CodeDeadlineExceeded, "", "exec: %v", cause)
	default:
		return wire.Errorf(wire.CodeUnavailable, "", "exec canceled: %v", cause)
	}
}
