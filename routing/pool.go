package routing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// lease is a pool agent held by one session's backend, stored in the
// Claims bucket under "<ws>.<agent>": whoever creates the key holds the
// agent, so two sessions never share one.
type lease struct {
	Workspace string    `json:"workspace"`
	Pool      string    `json:"pool"`
	Agent     string    `json:"agent"`
	Session   string    `json:"session"`
	UID       string    `json:"uid"`
	Backend   string    `json:"backend"`
	At        time.Time `json:"at"`
}

func claimKey(ws, agent string) string { return ws + "." + agent }

// claim is a lease taken for a pool backend and not yet recorded in the
// session. Record it in the state to be saved; after the save, settle it;
// if the save fails, abandon it.
type claim struct {
	backend  string
	agent    string
	uid      string
	ws       string
	created  bool   // this call took the lease (else it was ours already)
	replaced string // the gone agent it replaces, "" if none
}

// record notes the claim in st (a nil claim does nothing).
func (c *claim) record(st *State) {
	if c != nil {
		st.Claims[c.backend] = c.agent
	}
}

// backend resolves backend name of st to the Backend its operations run
// on. An agent backend must be enrolled. A pool backend uses its claim
// unless the claimed agent is gone for good; then, or without a claim, it
// claims an online agent of the pool and returns the claim to record.
func (r *Router) backend(ctx context.Context, st *State, name string) (Backend, *claim, error) {
	spec, ok := st.Backends[name]
	if !ok {
		return nil, nil, invalid("session %s has no backend %q", st.ID, name)
	}
	if spec.Kind == KindAgent {
		ag := subjects.Agent{Workspace: st.Workspace, ID: spec.Agent}
		if _, err := r.cfg.Agents.Enrolled(ctx, ag); err != nil {
			return nil, nil, fmt.Errorf("backend %s: %w", name, err)
		}
		return r.cfg.Dial(ag), nil, nil
	}
	if cur, ok := st.Agent(name); ok {
		gone, err := r.gone(ctx, cur)
		if err != nil {
			return nil, nil, err
		}
		if !gone {
			return r.cfg.Dial(cur), nil, nil
		}
	}
	cl, err := r.claim(ctx, st, name, spec.Pool)
	if err != nil {
		return nil, nil, fmt.Errorf("backend %s: %w", name, err)
	}
	return r.cfg.Dial(subjects.Agent{Workspace: st.Workspace, ID: cl.agent}), cl, nil
}

// gone reports whether ag is gone for good: revoked or never enrolled,
// never seen, or offline past its reconnect window. Reconnecting is not
// gone, and neither is a clean goodbye inside the window: a pool agent
// that restarts keeps its sessions.
func (r *Router) gone(ctx context.Context, ag subjects.Agent) (bool, error) {
	if _, err := r.cfg.Agents.Enrolled(ctx, ag); err != nil {
		if errors.Is(err, wire.ErrNotFound) {
			return true, nil
		}
		return false, err
	}
	e := r.cfg.Presence.Get(ag)
	if e.Status != presence.Offline {
		return false, nil
	}
	return e.LastSeen.IsZero() || !r.cfg.Now().Before(e.LeaseUntil.Add(r.cfg.ReconnectWindow)), nil
}

// claim leases an online, free agent of pool for backend name of st.
func (r *Router) claim(ctx context.Context, st *State, name, pool string) (*claim, error) {
	ids, err := r.cfg.Agents.PoolMembers(ctx, st.Workspace, pool)
	if err != nil {
		return nil, fmt.Errorf("list pool %s: %w", pool, err)
	}
	slices.Sort(ids)
	online, held := 0, 0
	for _, id := range ids {
		if r.cfg.Presence.Get(subjects.Agent{Workspace: st.Workspace, ID: id}).Status != presence.Online {
			continue
		}
		online++
		cl, err := r.lease(ctx, st, name, pool, id)
		if err != nil {
			return nil, err
		}
		if cl != nil {
			cl.replaced = st.Claims[name]
			return cl, nil
		}
		held++
	}
	return nil, wire.Errorf(wire.CodeUnavailable, wire.ReasonPoolExhausted,
		"pool %q has no free agent: %d enrolled, %d online, %d of those held by other sessions",
		pool, len(ids), online, held)
}

// lease tries to take agent id for backend name of st: nil, nil when
// another session holds it.
func (r *Router) lease(ctx context.Context, st *State, name, pool, id string) (*claim, error) {
	key := claimKey(st.Workspace, id)
	l := &lease{Workspace: st.Workspace, Pool: pool, Agent: id, Session: st.ID, UID: st.UID, Backend: name, At: r.cfg.Now().UTC()}
	cl := &claim{backend: name, agent: id, uid: st.UID, ws: st.Workspace, created: true}
	_, err := kvjson.Create(ctx, r.cfg.Claims, key, l)
	if err == nil {
		return cl, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, fmt.Errorf("claim agent %s: %w", id, err)
	}
	old, rev, err := r.readLease(ctx, st.Workspace, id)
	if err != nil || old == nil {
		return nil, err // released meanwhile: leave it to the next try
	}
	if old.UID == st.UID && old.Backend == name {
		cl.created = false // ours, from a write that did not land
		return cl, nil
	}
	if !r.stale(ctx, old) {
		return nil, nil
	}
	if _, err := kvjson.Update(ctx, r.cfg.Claims, key, l, rev); err != nil {
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return nil, nil
		}
		return nil, fmt.Errorf("take over stale claim of agent %s: %w", id, err)
	}
	r.cfg.Logger.Info("took over a stale pool claim", "agent", id, "from_session", old.Session, "session", st.ID)
	return cl, nil
}

// readLease reads the lease of agent id; nil when there is none.
func (r *Router) readLease(ctx context.Context, ws, id string) (*lease, uint64, error) {
	var l lease
	rev, err := kvjson.Get(ctx, r.cfg.Claims, claimKey(ws, id), &l)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("claim of agent %s: %w", id, err)
	}
	return &l, rev, nil
}

// stale reports whether l is held by nobody: older than the grace (a
// session may be about to record it) and not recorded by its session.
func (r *Router) stale(ctx context.Context, l *lease) bool {
	if r.cfg.Now().Sub(l.At) < r.cfg.ClaimGrace {
		return false
	}
	holder, err := r.load(ctx, l.Workspace, l.Session)
	if errors.Is(err, wire.ErrNotFound) {
		return true
	}
	if err != nil {
		return false
	}
	return holder.UID != l.UID || holder.Claims[l.Backend] != l.Agent
}

// release gives up the lease of agent id if session uid holds it.
func (r *Router) release(ctx context.Context, ws, id, uid string) error {
	l, rev, err := r.readLease(ctx, ws, id)
	if err != nil || l == nil || l.UID != uid {
		return err
	}
	err = r.cfg.Claims.Delete(ctx, claimKey(ws, id), jetstream.LastRevision(rev))
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("release claim of agent %s: %w", id, err)
	}
	return nil
}

// settle releases the lease a recorded claim replaced.
func (r *Router) settle(ctx context.Context, cl *claim) {
	if cl == nil || cl.replaced == "" || cl.replaced == cl.agent {
		return
	}
	if err := r.release(ctx, cl.ws, cl.replaced, cl.uid); err != nil {
		r.cfg.Logger.Warn("release replaced pool claim", "agent", cl.replaced, "err", err)
	}
}

// abandon releases a claim whose session write failed.
func (r *Router) abandon(ctx context.Context, cl *claim) {
	if cl == nil || !cl.created {
		return
	}
	if err := r.release(ctx, cl.ws, cl.agent, cl.uid); err != nil {
		r.cfg.Logger.Warn("release unrecorded pool claim", "agent", cl.agent, "err", err)
	}
}
