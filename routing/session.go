package routing

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Session is a handle on one session. Every method reads the session from
// KV, so a handle is cheap, never stale, and may be shared.
type Session struct {
	r      *Router
	ws, id string
}

// Workspace is the session's workspace.
func (s *Session) Workspace() string { return s.ws }

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// State reads the session; not_found if it does not exist.
func (s *Session) State(ctx context.Context) (*State, error) {
	return s.r.load(ctx, s.ws, s.id)
}

// Call runs op on the session's active backend and decodes the result into
// out (a pointer, or nil). The call carries the session's UID and epoch,
// and the pointer is read again afterwards. If it moved meanwhile, a read
// runs again on the new backend (up to Config.MaxAttempts tries in all),
// and a mutation (wire.Mutates) is never replayed: unless the old backend
// surely did not run it, Call answers conflict/outcome_unknown. A pool
// backend whose agent is gone for good claims another first. The Route
// says where the last try ran, also on an error.
func (s *Session) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) (Route, error) {
	mutates := wire.Mutates(op)
	var route Route
	for attempt := 1; attempt <= s.r.cfg.MaxAttempts; attempt++ {
		st, be, err := s.active(ctx)
		if err != nil {
			return route, err
		}
		route = Route{Backend: st.Active, Agent: be.Agent().ID, Epoch: st.Epoch}
		if attempt > 1 {
			resetOut(out)
		}
		o := opts
		o.Session, o.Epoch = st.UID, st.Epoch
		callErr := be.Call(ctx, op, body, out, o)
		cur, err := s.r.loadPointer(ctx, s.ws, s.id)
		switch {
		case err != nil && mutates && !notRun(callErr):
			return route, outcomeUnknownAfter(op, route, err)
		case err != nil:
			return route, err
		case cur == pointer{UID: st.UID, Epoch: st.Epoch}:
			if s.retryOnSameEpoch(ctx, st, be, callErr) {
				continue
			}
			return route, callErr
		case mutates && !notRun(callErr):
			return route, outcomeUnknown(op, route, cur.Epoch, callErr)
		}
		// The pointer moved and the result is void: try the new backend.
	}
	return route, wire.Errorf(wire.CodeUnavailable, wire.ReasonSessionMoving,
		"session %s moved %d times while %s ran; retry", s.id, s.r.cfg.MaxAttempts, op)
}

// retryOnSameEpoch reports whether a call that failed without moving the
// pointer may try again: only when the agent surely did not run it and
// the backend is a pool whose agent is gone for good, which the next try
// replaces. An agent backend is never replaced.
func (s *Session) retryOnSameEpoch(ctx context.Context, st *State, be Backend, callErr error) bool {
	if !notRun(callErr) || st.Backends[st.Active].Kind != KindPool {
		return false
	}
	gone, err := s.r.gone(ctx, be.Agent())
	return err == nil && gone
}

// active reads the pointer and resolves the backend it names. When a pool
// backend had to claim an agent, the claim is recorded first; replacing a
// gone agent moves the epoch, since the machine behind the pointer changed.
func (s *Session) active(ctx context.Context) (*State, Backend, error) {
	for range maxCAS {
		st, err := s.r.load(ctx, s.ws, s.id)
		if err != nil {
			return nil, nil, err
		}
		be, cl, err := s.r.backend(ctx, st, st.Active)
		if err != nil || cl == nil {
			return st, be, err
		}
		next := st.clone()
		cl.record(next)
		if cl.replaced != "" {
			next.move(next.Active, s.r.cfg.Now())
		}
		err = s.r.save(ctx, next)
		if err == nil {
			s.r.settle(ctx, cl)
			s.r.cfg.Logger.Info("session claimed a pool agent", "session", s.id, "backend", next.Active, "agent", cl.agent, "replaced", cl.replaced, "epoch", next.Epoch)
			return next, be, nil
		}
		s.r.abandon(ctx, cl)
		if !errors.Is(err, errRevision) {
			return nil, nil, err
		}
	}
	return nil, nil, changing(s.id)
}

// Swap points the session at backend to, bumping the epoch, and returns
// the new state. With ifEpoch > 0 the swap happens only if the session is
// still at that epoch (conflict/epoch_mismatch otherwise), so of two swaps
// with the same ifEpoch exactly one wins. A target that cannot serve now is
// 503 and the pointer does not move. Swapping to the active backend changes
// nothing. After committing, the old backend and the new one are told the
// new epoch, so their fences refuse work still sent at the old one.
func (s *Session) Swap(ctx context.Context, to string, ifEpoch uint64) (*State, error) {
	return s.SwapWith(ctx, to, SwapOptions{IfEpoch: ifEpoch})
}

// CarryFunc moves the workspace from st's active backend to agent to
// before the pointer moves (a snapshot restored there), and says what it
// moved.
type CarryFunc func(ctx context.Context, st *State, to subjects.Agent) (*Carry, error)

// SwapOptions refine a swap.
type SwapOptions struct {
	// IfEpoch, when set, swaps only a session still at that epoch.
	IfEpoch uint64
	// Carry, when set, runs once the target is resolved and ready and
	// before the pointer moves; its error ends the swap with the pointer
	// where it was. The pointer then moves only if the session is still
	// at the epoch the carry started from (else conflict/epoch_mismatch):
	// what was carried is what the session had. A carry that fails after
	// the session moved is conflict/epoch_mismatch too: its restore lost
	// to that move (the carry's writes on the target carry the session
	// and its epoch, and the target's fence refuses or stops them).
	Carry CarryFunc
}

// SwapWith is Swap with options: see SwapOptions.
func (s *Session) SwapWith(ctx context.Context, to string, o SwapOptions) (*State, error) {
	ifEpoch := o.IfEpoch
	var carried *Carry
	var carriedTo subjects.Agent
	for range maxCAS {
		st, err := s.r.load(ctx, s.ws, s.id)
		if err != nil {
			return nil, err
		}
		if ifEpoch != 0 && st.Epoch != ifEpoch {
			return nil, wire.Errorf(wire.CodeConflict, wire.ReasonEpochMismatch,
				"session %s is at epoch %d, not %d", s.id, st.Epoch, ifEpoch)
		}
		if _, ok := st.Backends[to]; !ok {
			return nil, invalid("session %s has no backend %q", s.id, to)
		}
		if st.Active == to {
			return st, nil
		}
		next, cl, err := s.prepare(ctx, st, to)
		if err != nil {
			return nil, err
		}
		if o.Carry != nil {
			ag, _ := next.Agent(to)
			if carried == nil || ag != carriedTo {
				if carried, err = o.Carry(ctx, st, ag); err != nil {
					s.r.abandon(ctx, cl)
					return nil, s.carryFailed(ctx, st, err)
				}
				carriedTo, ifEpoch = ag, st.Epoch
			}
			next.LastCarry = carried
		}
		if err = s.r.save(ctx, next); err == nil {
			s.r.settle(ctx, cl)
			s.fence(ctx, st, next)
			return next, nil
		}
		s.r.abandon(ctx, cl)
		if !errors.Is(err, errRevision) {
			return nil, err
		}
	}
	return nil, changing(s.id)
}

// carryFailed is the error of a swap whose carry from st failed with err:
// if the session moved meanwhile, the carry lost to that move (the target's
// fence refused or stopped its restore), which is conflict/epoch_mismatch
// as when the carry ends first and loses the CAS.
func (s *Session) carryFailed(ctx context.Context, st *State, err error) error {
	if errors.Is(err, &wire.Error{Code: wire.CodeConflict, Reason: wire.ReasonEpochMismatch}) {
		return err // already what a lost carry answers: no read needed
	}
	cur, lerr := s.r.loadPointer(ctx, s.ws, s.id)
	if lerr != nil || cur == (pointer{UID: st.UID, Epoch: st.Epoch}) {
		return err
	}
	return wire.Errorf(wire.CodeConflict, wire.ReasonEpochMismatch,
		"session %s moved from epoch %d to %d while its carry ran (%v)", s.id, st.Epoch, cur.Epoch, err)
}

// prepare resolves backend to, checks that it can serve now, and returns
// st moved to it with the claim to settle.
func (s *Session) prepare(ctx context.Context, st *State, to string) (*State, *claim, error) {
	be, cl, err := s.r.backend(ctx, st, to)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot swap session %s to %s: %w", s.id, to, err)
	}
	if err := be.Ready(ctx); err != nil {
		s.r.abandon(ctx, cl)
		return nil, nil, fmt.Errorf("cannot swap session %s to %s: %w", s.id, to, err)
	}
	next := st.clone()
	cl.record(next)
	next.move(to, s.r.cfg.Now())
	return next, cl, nil
}

// fence tells the old backend and the new one the new epoch, at once and
// best effort: the old one's fence then refuses requests that still carry
// the old epoch, and the new one's refuses, or stops part way, a restore
// that a carry which lost to this swap still runs there.
func (s *Session) fence(ctx context.Context, old, next *State) {
	var agents []subjects.Agent
	for _, st := range []*State{old, next} {
		if ag, ok := st.Agent(st.Active); ok && !slices.Contains(agents, ag) && s.r.cfg.Presence.Get(ag).Status == presence.Online {
			agents = append(agents, ag)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, fenceTimeout)
	defer cancel()
	ping := func(ag subjects.Agent) {
		err := s.r.cfg.Dial(ag).Call(ctx, wire.OpPing, nil, nil, rpc.CallOptions{Session: next.UID, Epoch: next.Epoch, Timeout: fenceTimeout})
		if err != nil {
			s.r.cfg.Logger.Debug("fence backend", "session", s.id, "agent", ag, "err", err)
		}
	}
	var wg sync.WaitGroup
	for _, ag := range agents {
		wg.Go(func() { ping(ag) })
	}
	wg.Wait()
}

// Delete removes the session and releases its pool claims.
func (s *Session) Delete(ctx context.Context) error {
	for range maxCAS {
		st, err := s.r.load(ctx, s.ws, s.id)
		if err != nil {
			return err
		}
		if err := s.r.remove(ctx, st); errors.Is(err, errRevision) {
			continue
		} else if err != nil {
			return err
		}
		for backend, id := range st.Claims {
			if err := s.r.release(ctx, s.ws, id, st.UID); err != nil {
				s.r.cfg.Logger.Warn("release pool claim of deleted session", "session", s.id, "backend", backend, "agent", id, "err", err)
			}
		}
		return nil
	}
	return changing(s.id)
}

func changing(id string) error {
	return wire.Errorf(wire.CodeUnavailable, "", "session %s kept changing under concurrent writers; retry", id)
}

// outcomeUnknownAfter answers a mutation whose session could not be read
// again: whether the pointer moved is unknown, so is the outcome.
func outcomeUnknownAfter(op string, from Route, err error) error {
	return wire.Errorf(wire.CodeConflict, wire.ReasonOutcomeUnknown,
		"%s ran on backend %s at epoch %d but the session could not be read again: %v", op, from.Backend, from.Epoch, err)
}

// resetOut zeroes what out points to, so that a retried read does not
// mix fields of two replies.
func resetOut(out any) {
	if out == nil {
		return
	}
	if v := reflect.ValueOf(out); v.Kind() == reflect.Pointer && !v.IsNil() {
		v.Elem().SetZero()
	}
}
