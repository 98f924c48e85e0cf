package wire

import (
	"strings"
	"time"
)

// Hello is published on agent.<ws>.<agent>.hello on every connect, and is the
// result of the capabilities op.
type Hello struct {
	Workspace    string          `msgpack:"ws" json:"workspace"`
	Agent        string          `msgpack:"agent" json:"agent"`
	Instance     string          `msgpack:"inst" json:"instance"` // random per daemon start
	PID          int             `msgpack:"pid" json:"pid"`
	Version      string          `msgpack:"ver" json:"version"` // agent build version
	Protocol     int             `msgpack:"proto" json:"protocol"`
	OS           string          `msgpack:"os" json:"os"`
	Arch         string          `msgpack:"arch" json:"arch"`
	Hostname     string          `msgpack:"host" json:"hostname"`
	Root         string          `msgpack:"root" json:"root"`
	GitVersion   string          `msgpack:"git,omitempty" json:"gitVersion,omitempty"`
	Capabilities map[string]bool `msgpack:"caps" json:"capabilities"`
	StartedAt    time.Time       `msgpack:"started" json:"startedAt"`
	// HeartbeatMs is the agent's heartbeat interval, from which the control
	// plane derives its lease before the first heartbeat arrives.
	HeartbeatMs int64 `msgpack:"ivl,omitempty" json:"-"`
	// Conn is the NATS connection the hello went out on; nil from agents
	// that predate it.
	Conn *ConnRef `msgpack:"conn,omitempty" json:"-"`
	// Policy summarizes the machine owner's policy file; nil when there is none.
	Policy *PolicySummary `msgpack:"policy,omitempty" json:"policy,omitempty"`
	// Paused is true while the machine's owner has paused the agent.
	Paused bool `msgpack:"paused,omitempty" json:"paused,omitempty"`
}

// ConnRef names one NATS connection: the id of the server it is on and the
// client id that server gave it (nats.go's ConnectedServerId and
// GetClientID). The control plane matches it against the server's
// disconnect events, so a dropped agent is reconnecting at once instead of
// when its heartbeats would have lapsed.
type ConnRef struct {
	Server string `msgpack:"srv" json:"server"`
	ID     uint64 `msgpack:"cid" json:"id"`
}

// Heartbeat is published on agent.<ws>.<agent>.heartbeat every few seconds.
type Heartbeat struct {
	Instance string    `msgpack:"inst"`
	Seq      uint64    `msgpack:"seq"`
	Time     time.Time `msgpack:"t"`
	// IntervalMs lets the control plane derive the lease from the agent's own rate.
	IntervalMs int64 `msgpack:"ivl"`
	// Conn is the connection the heartbeat went out on (see Hello.Conn).
	Conn *ConnRef `msgpack:"conn,omitempty"`
	// Paused is true while the machine's owner has paused the agent: it is
	// there (online) but answers every call agent_paused.
	Paused bool `msgpack:"paused,omitempty"`
}

// Goodbye is published on agent.<ws>.<agent>.goodbye on a clean stop.
type Goodbye struct {
	Instance string `msgpack:"inst"`
}

// PingResult is the result of ping.
type PingResult struct {
	Instance string    `msgpack:"inst"`
	Time     time.Time `msgpack:"t"`
}

// ProbeRequest is the body of probe. With Takeover, the live daemon answers
// and then stops, so that the sender can serve instead.
type ProbeRequest struct {
	Instance string `msgpack:"inst"`
	Takeover bool   `msgpack:"takeover,omitempty"`
}

// ProbeResult is the answer of a live daemon to another one starting with the
// same identity.
type ProbeResult struct {
	Instance string `msgpack:"inst"`
	PID      int    `msgpack:"pid"`
	Hostname string `msgpack:"host"`
}

// ExecRequest is the body of exec: a buffered command run.
type ExecRequest struct {
	Argv      []string          `msgpack:"argv,omitempty"`
	Command   string            `msgpack:"cmd,omitempty"`
	Cwd       string            `msgpack:"cwd,omitempty"`
	Env       map[string]string `msgpack:"env,omitempty"`
	Stdin     []byte            `msgpack:"stdin,omitempty"`
	TimeoutMs int64             `msgpack:"timeoutMs,omitempty"`
	OutputCap int               `msgpack:"cap,omitempty"`
}

// Exec defaults and bounds, from API.md.
const (
	DefaultExecTimeoutMs = 60000
	DefaultOutputCap     = 1 << 20
	// MaxExecTimeoutMs bounds timeoutMs (24 h).
	MaxExecTimeoutMs = 24 * 60 * 60 * 1000
	// ExecReplyReserve is the room an exec reply keeps for all but its
	// output.
	ExecReplyReserve = 64 << 10
)

// MaxExecOutput is the most output per stream an exec reply can carry on a
// connection with max payload maxPayload: both streams full still fit, with
// ExecReplyReserve to spare. The agent clamps an exec's OutputCap to it, so
// a huge cap costs no memory a reply could not carry. An unknown max payload
// (0) gives DefaultOutputCap.
func MaxExecOutput(maxPayload int64) int {
	if maxPayload <= 0 {
		return DefaultOutputCap
	}
	return int(max((maxPayload-ExecReplyReserve)/2, maxPayload/4))
}

// ExecResult is the result of exec. Output is exact bytes; in JSON they are
// base64, which is the HTTP body of exec?encoding=base64 as it stands (the
// control plane renders text itself).
type ExecResult struct {
	ExitCode   int    `msgpack:"exit" json:"exitCode"`
	Stdout     []byte `msgpack:"out" json:"stdout"`
	Stderr     []byte `msgpack:"err" json:"stderr"`
	TimedOut   bool   `msgpack:"timedOut" json:"timedOut"`
	Truncated  bool   `msgpack:"trunc" json:"truncated"`
	DurationMs int64  `msgpack:"ms" json:"durationMs"`
}

// ValidCommand checks what a command to run names: exactly one of argv
// (with a program) and shell text, without NUL bytes (no program can receive
// one). what ("exec", "a process") starts the message. Every error is
// invalid_argument.
func ValidCommand(what string, argv []string, command string) error {
	switch {
	case len(argv) == 0 && command == "":
		return Errorf(CodeInvalidArgument, "", "%s needs argv or command", what)
	case len(argv) > 0 && command != "":
		return Errorf(CodeInvalidArgument, "", "%s takes argv or command, not both", what)
	case len(argv) > 0 && argv[0] == "":
		return Errorf(CodeInvalidArgument, "", "argv[0] is empty")
	case strings.IndexByte(command, 0) >= 0:
		return Errorf(CodeInvalidArgument, "", "command holds a NUL byte; no program can receive one")
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return Errorf(CodeInvalidArgument, "", "argv[%d] holds a NUL byte; no program can receive one", i)
		}
	}
	return nil
}

// ValidCwdEnv checks a command's working directory and added environment:
// no NUL bytes, and variable names that are not empty and hold no '='.
// Every error is invalid_argument and names only what the request gave.
func ValidCwdEnv(cwd string, env map[string]string) error {
	if strings.IndexByte(cwd, 0) >= 0 {
		return Errorf(CodeInvalidArgument, "", "cwd holds a NUL byte")
	}
	for k, v := range env {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			return Errorf(CodeInvalidArgument, "", "env: the name %q is empty or holds '=' or a NUL byte", k)
		case strings.IndexByte(v, 0) >= 0:
			return Errorf(CodeInvalidArgument, "", "env: the value of %s holds a NUL byte", k)
		}
	}
	return nil
}

// Validate checks the request's shape before anything runs.
func (r *ExecRequest) Validate() error {
	if err := ValidCommand("exec", r.Argv, r.Command); err != nil {
		return err
	}
	if err := ValidCwdEnv(r.Cwd, r.Env); err != nil {
		return err
	}
	switch {
	case r.TimeoutMs < 0:
		return Errorf(CodeInvalidArgument, "", "timeoutMs must not be negative")
	case r.TimeoutMs > MaxExecTimeoutMs:
		return Errorf(CodeInvalidArgument, "", "timeoutMs must be at most %d", MaxExecTimeoutMs)
	case r.OutputCap < 0:
		return Errorf(CodeInvalidArgument, "", "outputCap must not be negative")
	}
	return nil
}

// Normalize validates r and fills in API.md's defaults: the one place an
// exec's defaults are applied. TimeoutMs 0 becomes DefaultExecTimeoutMs,
// OutputCap 0 DefaultOutputCap; OutputCap is then lowered to maxCap (what
// one reply can carry; <= 0 is no bound). The control plane calls it to
// size its call (after refusing an explicit cap above its own bound), the
// agent at its trust boundary.
func (r *ExecRequest) Normalize(maxCap int) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if r.TimeoutMs == 0 {
		r.TimeoutMs = DefaultExecTimeoutMs
	}
	if r.OutputCap == 0 {
		r.OutputCap = DefaultOutputCap
	}
	if maxCap > 0 {
		r.OutputCap = min(r.OutputCap, maxCap)
	}
	return nil
}

// PolicySummary is what an agent tells of its machine owner's policy file
// (API.md, "The owner's control of their machine"): the switches, the
// allow-lists and limits, and how many paths are denied, not which.
type PolicySummary struct {
	Exec      bool     `msgpack:"exec" json:"exec"`
	Processes bool     `msgpack:"procs" json:"processes"`
	TTY       bool     `msgpack:"tty" json:"tty"`
	FS        string   `msgpack:"fs" json:"fs"`
	Git       string   `msgpack:"git" json:"git"`
	Commands  []string `msgpack:"cmds" json:"commands"` // nil: any
	// DenyPaths is how many denyPaths globs there are.
	DenyPaths int   `msgpack:"deny,omitempty" json:"denyPaths"`
	Ports     []int `msgpack:"ports" json:"ports"` // nil: any
	// Limits are the per-process limits; LimitsBy is how they are applied:
	// "cgroup2", "cgroup1", "rlimit", or "" when none are set.
	Limits   PolicyLimits `msgpack:"lim" json:"limits"`
	LimitsBy string       `msgpack:"limby,omitempty" json:"limitsBy,omitempty"`
}

// PolicyLimits are the per-process limits of a policy; zero is none.
type PolicyLimits struct {
	MemoryBytes int64 `msgpack:"mem,omitempty" json:"memoryBytes"`
	CPUPercent  int   `msgpack:"cpu,omitempty" json:"cpuPercent"`
	Processes   int   `msgpack:"procs,omitempty" json:"processes"`
}
