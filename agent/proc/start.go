package proc

import (
	"context"
	"crypto/rand"
	"strings"
	"time"

	"github.com/outposthq/outpost/wire"
)

// newLimits derives a process's output limits from the configured total.
func newLimits(bytes int, grace time.Duration) limits {
	if bytes <= 0 {
		bytes = DefaultBufferBytes
	}
	// The window is a quarter: the rest keeps history that a reader who
	// lost what was in flight to it can still resume from.
	return limits{
		bytes: bytes, chunks: DefaultBufferChunks,
		window: bytes / 4, windowChunks: DefaultBufferChunks / 4,
		grace: orDefault(grace, DefaultReaderGrace),
	}
}

// Start starts a streaming process (see API.md "Processes") and returns its
// id and pid. Two starts with one id: exactly one wins, the other is
// conflict/already_exists.
//
// Errors: invalid_argument, conflict/already_exists,
// permission_denied/outside_root, not_found/executable_not_found,
// unsupported (a TTY where there are none), unavailable/busy (MaxProcesses
// are alive), unavailable (the Manager closed).
func (m *Manager) Start(req StartRequest) (id string, pid int, err error) {
	if err := validateStart(&req); err != nil {
		return "", 0, err
	}
	if id, err = m.reserve(req.ID); err != nil {
		return "", 0, err
	}
	out := newOutbuf(m.lim, req.Detached, time.Now())
	p, err := m.launch(context.Background(), spec{
		id: id, argv: req.Argv, command: req.Command, cwd: req.Cwd, env: req.Env,
		tty: req.TTY, cols: req.Cols, rows: req.Rows, stdin: req.Stdin, detached: req.Detached,
		hangup: req.Hangup && !req.Detached, timeout: req.Timeout, sink: out, out: out,
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.removeLocked(id)
		return "", 0, err
	}
	m.procs[id] = p
	return id, p.pid, nil
}

func validateStart(req *StartRequest) error {
	if err := wire.ValidCommand("a process", req.Argv, req.Command); err != nil {
		return err
	}
	if err := wire.ValidCwdEnv(req.Cwd, req.Env); err != nil {
		return err
	}
	switch {
	case req.Timeout < 0:
		return wire.Errorf(wire.CodeInvalidArgument, "", "timeout must not be negative")
	case req.TTY && !PTYSupported:
		return wire.Errorf(wire.CodeUnsupported, "", "this agent cannot run processes on a terminal")
	}
	if req.ID != "" {
		if err := wire.ValidProcID(req.ID); err != nil {
			return err
		}
	}
	if req.TTY {
		req.Stdin = true
		if req.Cols == 0 {
			req.Cols = wire.DefaultCols
		}
		if req.Rows == 0 {
			req.Rows = wire.DefaultRows
		}
		if req.Cols < 1 || req.Rows < 1 || req.Cols > 0xffff || req.Rows > 0xffff {
			return wire.Errorf(wire.CodeInvalidArgument, "", "terminal size %dx%d: cols and rows must be 1 to 65535", req.Cols, req.Rows)
		}
	}
	return nil
}

// reserve claims id (or a new one) in the table, evicting what expired.
func (m *Manager) reserve(id string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", closedError()
	}
	m.evictLocked(time.Now())
	if id == "" {
		id = "p" + strings.ToLower(rand.Text()[:12])
	}
	if _, ok := m.procs[id]; ok {
		return "", wire.Errorf(wire.CodeConflict, wire.ReasonAlreadyExists, "process %s already exists", id)
	}
	m.procs[id] = nil // reserved: starting
	m.order = append(m.order, id)
	return id, nil
}

func (m *Manager) removeLocked(id string) {
	delete(m.procs, id)
	for i, o := range m.order {
		if o == id {
			m.order = append(m.order[:i:i], m.order[i+1:]...)
			break
		}
	}
}
