// Package agent is the daemon that runs on a user's machine: it connects out
// to NATS with the credentials it got at enrollment, serves request/reply on
// agent.<ws>.<agent>.rpc, and says hello, heartbeat and goodbye so the control
// plane knows whether it is there.
//
// One identity has one live daemon: a starting daemon probes its own rpc
// subject (and takes a lock file on its machine) and refuses to serve beside
// a live one unless told to take over.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/agent/audit"
	"github.com/outposthq/outpost/agent/control"
	"github.com/outposthq/outpost/agent/policy"
	"github.com/outposthq/outpost/agent/proc"
	"github.com/outposthq/outpost/delivery"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/filelock"
	"github.com/outposthq/outpost/proxy"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Defaults of Config.
const (
	// DefaultHeartbeat is slow on purpose: the control plane learns that a
	// connection closed from the NATS server's disconnect events (see
	// wire/PROTOCOL.md, Presence events); heartbeats are the fallback, and
	// at 2 s 10,000 agents sent 5,000 a second.
	DefaultHeartbeat = 20 * time.Second
	DefaultWorkers   = 256
)

// ErrTakenOver is returned by Run when another daemon with the same identity
// took over (outpost agent run --takeover).
var ErrTakenOver = errors.New("agent: another daemon took over this identity")

// ErrAlreadyServed is returned by Run when a live daemon already serves the
// identity and Takeover is off.
var ErrAlreadyServed = errors.New("agent: another daemon already serves this identity")

// Handler serves one op. ctx carries the request's deadline; the result is
// encoded as the reply, an error becomes a *wire.Error reply.
type Handler func(ctx context.Context, req *wire.Request) (any, error)

// opFunc is how the agent runs an op: a Handler, or a handler whose result
// lives in pooled memory until its reply is encoded. release gives that
// memory back; it is nil when there is none to give back, and when err is
// not nil.
type opFunc func(ctx context.Context, req *wire.Request) (res any, release func(), err error)

// Config configures an Agent.
type Config struct {
	// Identity is the enrolled identity and its credentials. Required.
	Identity *enroll.Config
	// Root is the directory the agent serves; commands and files stay in it. Required.
	Root string
	// Version is the agent's build version, reported in hello.
	Version string
	// HeartbeatInterval is how often the agent says it is alive
	// (DefaultHeartbeat, 20 s).
	HeartbeatInterval time.Duration
	// Workers bounds requests served at once; more answer unavailable/busy.
	Workers int
	// Logger receives the daemon's log; nil discards.
	Logger *slog.Logger
	// NATSOptions are added after the agent's own (tests shorten timeouts).
	NATSOptions []nats.Option
	// Proxy picks the HTTP proxy of the agent's bulk connections to the
	// control plane (large transfers); nil reads HTTPS_PROXY, HTTP_PROXY and
	// NO_PROXY, as NATSProxy does for the NATS connection.
	Proxy proxy.Func
	// Takeover makes a live daemon with the same identity stop, and serves instead.
	Takeover bool
	// LockFile, when set, is locked for the daemon's life: a second daemon on
	// the same machine with the same lock file refuses to start.
	LockFile string
	// Journal, when set, is the file where the agent records the temporary
	// files of writes in progress (see fs.OpenJournal). Run, once it knows
	// no other daemon serves this identity, removes those a crash left, so
	// an upload cut short by a kill leaves nothing behind. Without it a
	// crash may leave temporary files, hidden from every file op.
	Journal string
	// Capabilities are merged into what hello reports.
	Capabilities map[string]bool
	// Procs runs commands; nil makes one on Root.
	Procs *proc.Manager
	// OnServing, when set, is called once the agent serves: subscribed, and
	// its hello received by the NATS server. A self-update's trial run
	// reports its health with it.
	OnServing func()
	// Policy is the machine owner's policy file (outpost agent run
	// --policy); nil allows everything. The agent checks every request
	// against its current policy (guard.go) and reports a summary in hello.
	Policy *policy.File
	// ControlSocket, when set, is where Run serves the local control socket
	// (agent/control) once this daemon owns its identity: a second daemon is
	// refused for that first, and a takeover replaces the old one's socket.
	ControlSocket string
	// Audit, when set, is the audit log every operation is appended to
	// (and published to the control plane); nil records nothing.
	Audit *audit.Log
	// MaxProcesses bounds the processes alive at once, started by
	// proc.start and running exec's together; more answer unavailable/busy.
	// Zero means proc.DefaultMaxProcesses (256). Ignored with Procs set.
	MaxProcesses int
}

func (c *Config) validate() error {
	if c.Identity == nil {
		return errors.New("agent: Identity is required")
	}
	if err := c.Identity.Validate(); err != nil {
		return fmt.Errorf("agent: identity: %w", err)
	}
	if c.Root == "" {
		return errors.New("agent: Root is required")
	}
	st, err := os.Stat(c.Root)
	if err != nil {
		return fmt.Errorf("agent: root: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("agent: root %s is not a directory", c.Root)
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeat
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	return nil
}

// Agent is one daemon. Make it with New, add ops with Register, then Run.
type Agent struct {
	cfg      Config
	id       subjects.Agent
	instance string
	started  time.Time
	log      *slog.Logger
	procs    *proc.Manager
	ownProcs bool
	files    *fileOps
	// gitConfigs are the user's git configuration paths under the root
	// (programguard.go).
	gitConfigs []string

	mu       sync.Mutex
	handlers map[string]opFunc
	running  bool

	conn    atomic.Pointer[nats.Conn] // the serving connection, for its max payload
	sem     chan struct{}
	fence   delivery.Fence // sessions' epochs (the delivery rule)
	idem    *idempotency
	stopCh  chan error // a takeover or fatal NATS error asks Run to stop
	links   *linkHub   // tells of sleep/wake and network changes
	linkWG  sync.WaitGroup
	uplink  uplink                    // sizes proc.read replies to the uplink (uplink.go)
	paused  atomic.Bool               // the owner's pause switch (Pause, Resume)
	beat    chan struct{}             // asks for a heartbeat now (a changed pause switch)
	lastErr atomic.Pointer[lastError] // the latest connection error, for Status
	pipes   *pipes                    // forwarded TCP connections (pipes.go)
	attach  attachStreams             // processes' attach streams (attach.go)
	// inflight are the requests being served, which a pause or a policy
	// reload may end (live.go); policyInForce is the policy applyPolicy
	// last put in force.
	inflight      inflight
	policyInForce atomic.Pointer[policy.Policy]
	// connected is signalled on every reconnect: the heartbeat loop then
	// beats soon (firstBeat) instead of up to a whole interval later.
	connected chan struct{}
}

// New checks cfg and returns an agent serving ping, capabilities, probe and exec.
func New(cfg Config) (*Agent, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &Agent{
		cfg:      cfg,
		id:       cfg.Identity.AgentID(),
		instance: wire.NewID(),
		started:  time.Now().UTC(),
		log:      cfg.Logger,
		procs:    cfg.Procs,
		handlers: map[string]opFunc{},
		sem:      make(chan struct{}, cfg.Workers),
		idem:     newIdempotency(),
		stopCh:   make(chan error, 1),
		beat:     make(chan struct{}, 1),
		links:    links,

		connected: make(chan struct{}, 1),
	}
	a.pipes = newPipes(a)
	a.attach.a = a
	if a.procs == nil {
		m, err := proc.NewManager(proc.Config{Root: cfg.Root, Logger: cfg.Logger, MaxProcesses: cfg.MaxProcesses, Resources: a.resources})
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		a.procs, a.ownProcs = m, true
	}
	if err := a.registerBuiltins(); err != nil {
		if a.ownProcs {
			a.procs.Close()
		}
		return nil, fmt.Errorf("agent: %w", err)
	}
	if cfg.Policy != nil {
		cfg.Policy.OnApply(a.applyPolicy)
	}
	return a, nil
}

// Register serves op with h, replacing any handler of op. Call it before Run.
func (a *Agent) Register(op string, h Handler) {
	a.register(op, func(ctx context.Context, req *wire.Request) (any, func(), error) {
		res, err := h(ctx, req)
		return res, nil, err
	})
}

// register serves op with f, replacing any handler of op.
func (a *Agent) register(op string, f opFunc) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.handlers[op] = f
}

func (a *Agent) handler(op string) opFunc {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.handlers[op]
}

// Busy reports whether work is live that a restart would cut: a running
// process or an open file transfer, and what, for the log. A self-update
// waits for it to end.
func (a *Agent) Busy() (bool, string) {
	n := 0
	for _, p := range a.procs.List() {
		if p.Running {
			n++
		}
	}
	if n > 0 {
		return true, fmt.Sprintf("%d process(es) running", n)
	}
	if t := a.files.transfers.count(); t > 0 {
		return true, fmt.Sprintf("%d file transfer(s) open", t)
	}
	return false, ""
}

// Instance is this daemon's random instance id.
func (a *Agent) Instance() string { return a.instance }

// Hello is what the agent says on every connect and answers to capabilities.
func (a *Agent) Hello() wire.Hello {
	host, _ := os.Hostname()
	caps := map[string]bool{"exec": true, "procs": true, "pty": proc.PTYSupported}
	for k, v := range portCapabilities() {
		caps[k] = v
	}
	for k, v := range a.cfg.Capabilities {
		caps[k] = v
	}
	var summary *wire.PolicySummary
	if a.cfg.Policy != nil {
		summary = a.cfg.Policy.Current().Summary(a.limitsBy())
		caps["policy"] = true
	}
	return wire.Hello{
		Workspace:    a.id.Workspace,
		Agent:        a.id.ID,
		Instance:     a.instance,
		PID:          os.Getpid(),
		Version:      a.cfg.Version,
		Protocol:     wire.Version,
		OS:           runtime.GOOS,
		Arch:         runtime.GOARCH,
		Hostname:     host,
		Root:         a.cfg.Root,
		GitVersion:   a.files.gitVer,
		Capabilities: caps,
		StartedAt:    a.started,
		HeartbeatMs:  a.cfg.HeartbeatInterval.Milliseconds(),
		Policy:       summary,
		Paused:       a.paused.Load(),
	}
}

// Run serves until ctx ends (a clean stop: goodbye, in-flight requests
// finish or are canceled, processes are killed), another daemon takes over
// (ErrTakenOver), or the credentials stop working (revoked: an error).
func (a *Agent) Run(ctx context.Context) error {
	a.mu.Lock()
	if a.running {
		a.mu.Unlock()
		return errors.New("agent: Run called twice")
	}
	a.running = true
	a.mu.Unlock()
	if a.ownProcs {
		defer a.procs.Close()
	}
	defer a.files.close()
	if a.cfg.LockFile != "" {
		unlock, err := a.lock(ctx)
		if err != nil {
			return err
		}
		defer unlock()
	}
	nc, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer func() {
		nc.Close()
		a.linkWG.Wait() // watchLinks' goroutine, which may be in a call on nc
	}()
	if err := a.claim(ctx, nc); err != nil {
		return err
	}
	if err := a.sweep(); err != nil {
		return err
	}
	if a.cfg.ControlSocket != "" {
		srv, err := control.Listen(a.cfg.ControlSocket, a, a.cfg.Takeover, a.log)
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		defer srv.Close()
	}
	return a.serve(ctx, nc)
}

// sweep opens the journal of temporary files, removing what a crash left.
func (a *Agent) sweep() error {
	if a.cfg.Journal == "" {
		return nil
	}
	removed, err := a.files.fs.OpenJournal(a.cfg.Journal)
	if len(removed) > 0 {
		a.log.Info("removed temporary files of writes a crash interrupted", "files", removed)
	}
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return nil
}

// lock takes the lock file; with Takeover it waits for the old daemon (asked
// over NATS to stop, in claim) to let go.
func (a *Agent) lock(ctx context.Context) (func(), error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		f, err := filelock.Lock(a.cfg.LockFile)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, filelock.ErrLocked) {
			return nil, err
		}
		if !a.cfg.Takeover {
			return nil, fmt.Errorf("%w: lock file %s is held by a running daemon (use --takeover to replace it)", ErrAlreadyServed, a.cfg.LockFile)
		}
		if err := a.askTakeover(ctx); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: the running daemon did not let go of %s", ErrAlreadyServed, a.cfg.LockFile)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// askTakeover connects briefly to ask a live daemon on another connection to
// stop; used while the lock is held on this machine.
func (a *Agent) askTakeover(ctx context.Context) error {
	nc, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = a.probe(ctx, nc)
	return err
}
