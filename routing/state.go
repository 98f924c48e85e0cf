package routing

import (
	"maps"
	"slices"
	"time"

	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Limits of a session.
const (
	// MaxBackends bounds the backends of one session.
	MaxBackends = 16
	// MaxTransitions is how many transitions a session keeps, newest last.
	MaxTransitions = 100
)

// Kind is the kind of a backend.
type Kind string

// The backend kinds.
const (
	// KindAgent is one enrolled agent, typically the user's own machine.
	// Offline, it answers 503; it is never replaced by anything else.
	KindAgent Kind = "agent"
	// KindPool is any agent enrolled into a named pool, compute the
	// operator runs. The session claims one and keeps it; only when that
	// agent is gone for good does the session claim another.
	KindPool Kind = "pool"
)

// Spec names a backend: Kind agent with Agent, or Kind pool with Pool.
type Spec struct {
	Kind  Kind   `json:"kind"`
	Agent string `json:"agent,omitempty"`
	Pool  string `json:"pool,omitempty"`
}

// validate checks the spec of backend name.
func (s Spec) validate(name string) error {
	if err := subjects.ValidateID(name); err != nil {
		return invalid("backend name %q: %v", name, err)
	}
	switch s.Kind {
	case KindAgent:
		if s.Pool != "" {
			return invalid("backend %s: an agent backend names an agent, not a pool", name)
		}
		if err := subjects.ValidateID(s.Agent); err != nil {
			return invalid("backend %s: agent: %v", name, err)
		}
	case KindPool:
		if s.Agent != "" {
			return invalid("backend %s: a pool backend names a pool, not an agent", name)
		}
		if err := subjects.ValidateID(s.Pool); err != nil {
			return invalid("backend %s: pool: %v", name, err)
		}
	default:
		return invalid("backend %s: kind must be %q or %q, not %q", name, KindAgent, KindPool, s.Kind)
	}
	return nil
}

// Transition is one move of a session's pointer (wire.Transition: the
// HTTP API returns the same shape).
type Transition = wire.Transition

// State is a session as stored in KV.
type State struct {
	Workspace string `json:"workspace"`
	ID        string `json:"id"`
	// UID is random per session incarnation; agents fence on it, so a
	// session deleted and created again under the same id starts afresh.
	UID    string `json:"uid"`
	Active string `json:"active"`
	// Epoch starts at 1 and grows by one with every move of the pointer.
	Epoch    uint64          `json:"epoch"`
	Backends map[string]Spec `json:"backends"`
	// Claims maps a pool backend to the agent it holds.
	Claims      map[string]string `json:"claims,omitempty"`
	Transitions []Transition      `json:"transitions"`
	CreatedAt   time.Time         `json:"createdAt"`
	// SnapshotEveryMs, when set, has the control plane snapshot the
	// active backend's root that often (see Carry).
	SnapshotEveryMs int64 `json:"snapshotEveryMs,omitempty"`
	// LastCarry is what the last swap with carry moved.
	LastCarry *Carry `json:"lastCarry,omitempty"`
	// Revision is the KV revision the state was read at.
	Revision uint64 `json:"-"`
}

// Agent is the agent behind backend name as far as st knows: the agent of
// an agent backend, the claim of a pool backend; false when there is none.
func (st *State) Agent(name string) (subjects.Agent, bool) {
	spec, ok := st.Backends[name]
	if !ok {
		return subjects.Agent{}, false
	}
	id := spec.Agent
	if spec.Kind == KindPool {
		id = st.Claims[name]
	}
	return subjects.Agent{Workspace: st.Workspace, ID: id}, id != ""
}

// Carry is what a swap with carry moved (wire.LastCarry: the HTTP API
// returns the same shape).
type Carry = wire.LastCarry

// clone returns a deep copy.
func (st *State) clone() *State {
	c := *st
	c.Backends = maps.Clone(st.Backends)
	c.Claims = maps.Clone(st.Claims)
	if c.Claims == nil {
		c.Claims = map[string]string{}
	}
	c.Transitions = slices.Clone(st.Transitions)
	return &c
}

// move points st at to, bumps the epoch and records the transition.
func (st *State) move(to string, at time.Time) {
	from := st.Active
	st.Active = to
	st.Epoch++
	ag, _ := st.Agent(to)
	st.Transitions = append(st.Transitions, Transition{From: from, To: to, Epoch: st.Epoch, At: at.UTC(), Agent: ag.ID})
	if n := len(st.Transitions); n > MaxTransitions {
		st.Transitions = slices.Clone(st.Transitions[n-MaxTransitions:])
	}
}

// CreateRequest is what a new session is made of.
type CreateRequest struct {
	// ID is the session id; empty makes one ("s-" and 8 hex digits).
	ID string
	// Backends names each backend. At least one, at most MaxBackends.
	Backends map[string]Spec
	// Active is the backend the session starts on.
	Active string
	// SnapshotEveryMs, when set (at least MinSnapshotEveryMs), is how often
	// the active backend is snapshotted.
	SnapshotEveryMs int64
}

// MinSnapshotEveryMs is the shortest interval of periodic snapshots.
const MinSnapshotEveryMs = 1000

func (req *CreateRequest) validate() error {
	if req.ID != "" {
		if err := subjects.ValidateID(req.ID); err != nil {
			return invalid("session id: %v", err)
		}
	}
	switch n := len(req.Backends); {
	case n == 0:
		return invalid("a session needs at least one backend")
	case n > MaxBackends:
		return invalid("a session has at most %d backends, not %d", MaxBackends, n)
	}
	for name, spec := range req.Backends {
		if err := spec.validate(name); err != nil {
			return err
		}
	}
	if _, ok := req.Backends[req.Active]; !ok {
		return invalid("active %q is not one of the session's backends", req.Active)
	}
	if req.SnapshotEveryMs != 0 && req.SnapshotEveryMs < MinSnapshotEveryMs {
		return invalid("snapshotEveryMs must be at least %d, not %d", MinSnapshotEveryMs, req.SnapshotEveryMs)
	}
	return nil
}

// Route says where an operation ran: the backend's name, its agent and the
// epoch the call carried.
type Route struct {
	Backend string
	Agent   string
	Epoch   uint64
}

func invalid(format string, args ...any) error {
	return wire.Errorf(wire.CodeInvalidArgument, "", format, args...)
}
