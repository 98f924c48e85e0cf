package routing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
)

// Defaults of Config.
const (
	DefaultReadyTimeout = time.Second
	DefaultMaxAttempts  = 5
	DefaultClaimGrace   = time.Minute
	// fenceTimeout bounds the ping that tells the old backend a new epoch.
	fenceTimeout = 250 * time.Millisecond
	// maxCAS bounds compare-and-swap retries of one change.
	maxCAS = 8
)

// Directory is what routing needs to know of enrolled agents; the control
// plane implements it over its agent records.
type Directory interface {
	// Enrolled returns the pool of ag ("" when none), or a not_found
	// *wire.Error when ag was never enrolled or was revoked.
	Enrolled(ctx context.Context, ag subjects.Agent) (pool string, err error)
	// PoolMembers lists the enrolled, not revoked agents of pool in ws.
	PoolMembers(ctx context.Context, ws, pool string) ([]string, error)
}

// Config configures a Router. Sessions, Claims, Presence, Agents and RPC
// (or Dial) are required; zero values of the rest take the defaults.
type Config struct {
	// Sessions is the KV bucket of sessions, keyed "<ws>.<session>".
	Sessions jetstream.KeyValue
	// Claims is the KV bucket of pool leases, keyed "<ws>.<agent>".
	Claims jetstream.KeyValue
	// Presence says whether agents are online.
	Presence *presence.Tracker
	// Agents knows the enrolled agents and their pools.
	Agents Directory
	// RPC calls agents; Dial, when set, is used instead.
	RPC  *rpc.Client
	Dial Dialer
	// ReadyTimeout bounds the ping that checks a swap's target (1 s).
	ReadyTimeout time.Duration
	// MaxAttempts bounds the tries of one operation (5).
	MaxAttempts int
	// ClaimGrace is how old a lease must be before another session may
	// take it over when its session does not hold it (1 min).
	ClaimGrace time.Duration
	// ReconnectWindow is how long after its lease lapsed a claimed pool
	// agent is still waited for, goodbye or not, before the session may
	// claim another (presence.DefaultWindow). Use the tracker's window.
	ReconnectWindow time.Duration
	// Logger receives warnings; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Router keeps sessions in KV and routes their operations. It holds no
// per-session state of its own, so several routers (control-plane
// replicas) can serve the same sessions at once. It is safe for
// concurrent use.
type Router struct {
	cfg Config
}

// New checks cfg and returns a router.
func New(cfg Config) (*Router, error) {
	switch {
	case cfg.Sessions == nil || cfg.Claims == nil:
		return nil, errors.New("routing: Sessions and Claims buckets are required")
	case cfg.Presence == nil || cfg.Agents == nil:
		return nil, errors.New("routing: Presence and Agents are required")
	case cfg.RPC == nil && cfg.Dial == nil:
		return nil, errors.New("routing: RPC or Dial is required")
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.ClaimGrace <= 0 {
		cfg.ClaimGrace = DefaultClaimGrace
	}
	if cfg.ReconnectWindow <= 0 {
		cfg.ReconnectWindow = presence.DefaultWindow
	}
	if cfg.Dial == nil {
		cfg.Dial = RPCDialer(cfg.RPC, cfg.ReadyTimeout)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Router{cfg: cfg}, nil
}

// Session is a handle on session id of workspace ws; it does not check
// that the session exists (its methods answer not_found).
func (r *Router) Session(ws, id string) *Session {
	return &Session{r: r, ws: ws, id: id}
}

// Create stores a new session. Agent backends must name enrolled agents
// (not_found otherwise) but need not be online: a laptop may be asleep,
// and its calls answer 503 until it is back. An active pool backend claims
// an agent now (503 pool_exhausted when none is free). An id in use is
// conflict/already_exists.
func (r *Router) Create(ctx context.Context, ws string, req CreateRequest) (*State, error) {
	if err := subjects.ValidateID(ws); err != nil {
		return nil, invalid("workspace: %v", err)
	}
	if err := req.validate(); err != nil {
		return nil, err
	}
	if req.ID == "" {
		req.ID = "s-" + randomHex(4)
	}
	for name, spec := range req.Backends {
		if spec.Kind != KindAgent {
			continue
		}
		if _, err := r.cfg.Agents.Enrolled(ctx, subjects.Agent{Workspace: ws, ID: spec.Agent}); err != nil {
			return nil, fmt.Errorf("backend %s: %w", name, err)
		}
	}
	st := &State{
		Workspace: ws, ID: req.ID, UID: randomHex(8), Active: req.Active, Epoch: 1,
		Backends: req.Backends, Claims: map[string]string{}, Transitions: []Transition{},
		CreatedAt: r.cfg.Now().UTC(), SnapshotEveryMs: req.SnapshotEveryMs,
	}
	_, cl, err := r.backend(ctx, st, st.Active)
	if err != nil {
		return nil, err
	}
	cl.record(st)
	if err := r.save(ctx, st); err != nil {
		r.abandon(ctx, cl)
		return nil, err
	}
	return st, nil
}

// List returns the sessions of ws, sorted by id.
func (r *Router) List(ctx context.Context, ws string) ([]*State, error) {
	if err := subjects.ValidateID(ws); err != nil {
		return nil, invalid("workspace: %v", err)
	}
	return r.list(ctx, ws)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
