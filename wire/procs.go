package wire

import "time"

// Process ops: a streaming process is started by id, its output read by
// sequence number, and controlled by id until it is evicted.
const (
	OpProcStart     = "proc.start"
	OpProcList      = "proc.list"
	OpProcGet       = "proc.get"
	OpProcRead      = "proc.read"
	OpProcWrite     = "proc.write"
	OpProcSignal    = "proc.signal"
	OpProcResize    = "proc.resize"
	OpProcTerminate = "proc.terminate"
)

func init() {
	RegisterOp(OpProcStart, OpInfo{Mutates: true})
	RegisterOp(OpProcList, OpInfo{})
	RegisterOp(OpProcGet, OpInfo{})
	// A read moves the flow-control acknowledgement forward, which a
	// repeated read with the same cursor does again: it is safe to retry.
	RegisterOp(OpProcRead, OpInfo{})
	RegisterOp(OpProcWrite, OpInfo{Mutates: true})
	RegisterOp(OpProcSignal, OpInfo{Mutates: true})
	RegisterOp(OpProcResize, OpInfo{Mutates: true})
	RegisterOp(OpProcTerminate, OpInfo{Mutates: true})
}

// Output stream names of a ProcChunk.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	StreamPTY    = "pty"
)

// Process limits and defaults.
const (
	// MaxProcIDLen is the longest process id.
	MaxProcIDLen = 63
	// MaxWriteIDLen is the longest stdin write id.
	MaxWriteIDLen = 128
	// DefaultReadBytes is the output read size when a read names none.
	DefaultReadBytes = 1 << 20
	// MaxReadBytes bounds one read's output, so that a reply stays well
	// under the 8 MiB max payload of the embedded server. A control plane
	// on a server with a smaller max payload asks for less.
	MaxReadBytes = 4 << 20
	// MaxReadWaitMs bounds how long one read may wait for output.
	MaxReadWaitMs = 60000
	// DefaultCols and DefaultRows size a PTY started without a size.
	DefaultCols = 80
	DefaultRows = 24
	// ChunkOverhead is what one chunk is counted for in a read's byte
	// budget on top of its data, so that a read of many tiny chunks still
	// encodes within MaxBytes plus a small envelope.
	ChunkOverhead = 32
)

// ProcStartRequest is the body of proc.start.
type ProcStartRequest struct {
	// ID names the process; empty lets the agent pick one.
	ID      string            `json:"id,omitempty" msgpack:"id,omitempty"`
	Argv    []string          `json:"argv,omitempty" msgpack:"argv,omitempty"`
	Command string            `json:"command,omitempty" msgpack:"cmd,omitempty"`
	Cwd     string            `json:"cwd,omitempty" msgpack:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty" msgpack:"env,omitempty"`
	// TTY runs the process on a pseudo-terminal of Cols × Rows.
	TTY  bool `json:"tty,omitempty" msgpack:"tty,omitempty"`
	Cols int  `json:"cols,omitempty" msgpack:"cols,omitempty"`
	Rows int  `json:"rows,omitempty" msgpack:"rows,omitempty"`
	// Stdin gives the process a stdin pipe fed by proc.write; without it
	// stdin is the null device. A TTY always has stdin.
	Stdin bool `json:"stdin,omitempty" msgpack:"stdin,omitempty"`
	// Detached never waits for a reader: output beyond the retention limit
	// is dropped oldest first.
	Detached bool `json:"detached,omitempty" msgpack:"detached,omitempty"`
	// Hangup sends SIGHUP to the group once no reader has been attached
	// for longer than the reader grace (never for a detached process).
	Hangup bool `json:"hangup,omitempty" msgpack:"hangup,omitempty"`
	// TimeoutMs kills the group after this long (exit code 124); 0 is none.
	TimeoutMs int64 `json:"timeoutMs,omitempty" msgpack:"timeoutMs,omitempty"`
}

// Validate checks the request's shape before anything runs.
func (r *ProcStartRequest) Validate() error {
	if r.ID != "" {
		if err := validProcID(r.ID); err != nil {
			return err
		}
	}
	if err := ValidCommand("a process", r.Argv, r.Command); err != nil {
		return err
	}
	if err := ValidCwdEnv(r.Cwd, r.Env); err != nil {
		return err
	}
	switch {
	case r.TimeoutMs < 0:
		return Errorf(CodeInvalidArgument, "", "timeoutMs must not be negative")
	case !r.TTY && (r.Cols != 0 || r.Rows != 0):
		return Errorf(CodeInvalidArgument, "", "cols and rows need tty")
	case r.Cols < 0 || r.Rows < 0:
		return Errorf(CodeInvalidArgument, "", "cols and rows must be positive")
	}
	return validSize(max(r.Cols, 1), max(r.Rows, 1))
}

// ProcStartResult is the result of proc.start, and the HTTP body of a
// started process (one type for both).
type ProcStartResult struct {
	ID  string `msgpack:"id" json:"id"`
	PID int    `msgpack:"pid" json:"pid"`
}

// ProcInfo describes one process. ExitCode is set once it exited (null in
// JSON while it runs). It is also the HTTP body of a process (one type for
// both; the control plane only normalizes times and an empty argv).
type ProcInfo struct {
	ID        string    `msgpack:"id" json:"id"`
	PID       int       `msgpack:"pid" json:"pid"`
	Argv      []string  `msgpack:"argv" json:"argv"`
	TTY       bool      `msgpack:"tty,omitempty" json:"tty"`
	Detached  bool      `msgpack:"detached,omitempty" json:"detached"`
	Running   bool      `msgpack:"running" json:"running"`
	ExitCode  *int      `msgpack:"exit,omitempty" json:"exitCode"`
	TimedOut  bool      `msgpack:"timedOut,omitempty" json:"timedOut"`
	Closed    bool      `msgpack:"closed,omitempty" json:"closed"`
	StartedAt time.Time `msgpack:"started" json:"startedAt"`
	ExitedAt  time.Time `msgpack:"exited,omitempty" json:"exitedAt,omitzero"`
}

// ProcListResult is the result of proc.list, ordered by start time.
type ProcListResult struct {
	Processes []ProcInfo `msgpack:"procs"`
}

// ProcRef names one process: the body of proc.get and proc.terminate.
type ProcRef struct {
	ID string `msgpack:"id"`
}

// Validate checks that a process is named.
func (r *ProcRef) Validate() error { return validProcID(r.ID) }

// ProcReadRequest is the body of proc.read: the events after sequence number
// After, at most MaxBytes of them (at least one chunk), waiting up to WaitMs
// for one to exist. A read acknowledges every event up to After.
type ProcReadRequest struct {
	ID       string `msgpack:"id"`
	After    uint64 `msgpack:"after,omitempty"`
	MaxBytes int    `msgpack:"max,omitempty"`
	WaitMs   int64  `msgpack:"wait,omitempty"`
}

// Validate checks the request's shape.
func (r *ProcReadRequest) Validate() error {
	switch {
	case r.MaxBytes < 0:
		return Errorf(CodeInvalidArgument, "", "maxBytes must not be negative")
	case r.WaitMs < 0 || r.WaitMs > MaxReadWaitMs:
		return Errorf(CodeInvalidArgument, "", "waitMs must be 0 to %d", MaxReadWaitMs)
	}
	return validProcID(r.ID)
}

// ProcChunk is one piece of output as the process wrote it.
type ProcChunk struct {
	Seq    uint64 `msgpack:"s"`
	Stream string `msgpack:"st"`
	Data   []byte `msgpack:"d"`
}

// ProcReadResult is the result of proc.read. NextSeq is the cursor to pass
// as After next: every event up to it is covered by this result. ExitSeq and
// ClosedSeq are the sequence numbers of the exit and closed events once the
// cursor covers them (0 before). Dropped counts output bytes between After
// and the first chunk that were dropped before anyone read them.
type ProcReadResult struct {
	Chunks    []ProcChunk `msgpack:"chunks"`
	NextSeq   uint64      `msgpack:"next"`
	ExitSeq   uint64      `msgpack:"exitSeq,omitempty"`
	ExitCode  int         `msgpack:"exit,omitempty"`
	TimedOut  bool        `msgpack:"timedOut,omitempty"`
	ClosedSeq uint64      `msgpack:"closedSeq,omitempty"`
	Dropped   int64       `msgpack:"dropped,omitempty"`
}

// sizeHint is the chunks' data and their fields.
func (r *ProcReadResult) sizeHint() int {
	n := envelopeSlack
	for _, c := range r.Chunks {
		n += len(c.Data) + len(c.Stream) + 32
	}
	return n
}

// ProcWriteRequest is the body of proc.write: Data for the process's stdin,
// then EOF when set. A WriteID already accepted is acknowledged again
// without writing.
type ProcWriteRequest struct {
	ID      string `msgpack:"id"`
	WriteID string `msgpack:"wid,omitempty"`
	Data    []byte `msgpack:"d,omitempty"`
	EOF     bool   `msgpack:"eof,omitempty"`
}

// Validate checks the request's shape.
func (r *ProcWriteRequest) Validate() error {
	if len(r.WriteID) > MaxWriteIDLen {
		return Errorf(CodeInvalidArgument, "", "writeId is longer than %d characters", MaxWriteIDLen)
	}
	return validProcID(r.ID)
}

// ProcSignalRequest is the body of proc.signal. Signal is a name of the
// allow-list: INT TERM KILL HUP QUIT USR1 USR2.
type ProcSignalRequest struct {
	ID     string `msgpack:"id"`
	Signal string `msgpack:"sig"`
}

// Validate checks the request's shape.
func (r *ProcSignalRequest) Validate() error {
	if r.Signal == "" || len(r.Signal) > 16 {
		return Errorf(CodeInvalidArgument, "", "signal must be named")
	}
	return validProcID(r.ID)
}

// ProcResizeRequest is the body of proc.resize.
type ProcResizeRequest struct {
	ID   string `msgpack:"id"`
	Cols int    `msgpack:"cols"`
	Rows int    `msgpack:"rows"`
}

// Validate checks the request's shape.
func (r *ProcResizeRequest) Validate() error {
	if err := validSize(r.Cols, r.Rows); err != nil {
		return err
	}
	return validProcID(r.ID)
}

// ProcTerminateResult is the result of proc.terminate.
type ProcTerminateResult struct {
	WasRunning bool `msgpack:"wasRunning"`
}

// ValidProcID checks a process id: [a-z0-9][a-z0-9_-]{0,62}, like every id
// of the API.
func ValidProcID(id string) error { return validProcID(id) }

func validProcID(id string) error {
	if id == "" || len(id) > MaxProcIDLen {
		return Errorf(CodeInvalidArgument, "", "process id must be 1 to %d characters", MaxProcIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '_' || c == '-')
		if !ok {
			return Errorf(CodeInvalidArgument, "", "process id %q must match [a-z0-9][a-z0-9_-]{0,62}", id)
		}
	}
	return nil
}

// validSize checks a terminal size: 1 to 65535 in each direction.
func validSize(cols, rows int) error {
	if cols < 1 || rows < 1 || cols > 0xffff || rows > 0xffff {
		return Errorf(CodeInvalidArgument, "", "terminal size %dx%d: cols and rows must be 1 to 65535", cols, rows)
	}
	return nil
}
