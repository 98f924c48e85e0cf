package routing

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/wire"
)

func sessionKey(ws, id string) string { return ws + "." + id }

func notFound(ws, id string) error {
	return wire.Errorf(wire.CodeNotFound, "", "session %q not found in workspace %q", id, ws)
}

func isAbsent(err error) bool {
	return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted)
}

// load reads session id of ws with its revision.
func (r *Router) load(ctx context.Context, ws, id string) (*State, error) {
	e, err := r.cfg.Sessions.Get(ctx, sessionKey(ws, id))
	if isAbsent(err) {
		return nil, notFound(ws, id)
	}
	if err != nil {
		return nil, fmt.Errorf("read session %s/%s: %w", ws, id, err)
	}
	var st State
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return nil, fmt.Errorf("decode session %s/%s: %w", ws, id, err)
	}
	st.Revision = e.Revision()
	return &st, nil
}

// pointer is what the check after a call reads: the session's incarnation
// and epoch. A session deleted and created again under the same id has a
// new UID, so a call that ran on the old one counts as having raced a move.
type pointer struct {
	UID   string `json:"uid"`
	Epoch uint64 `json:"epoch"`
}

// loadPointer reads the UID and epoch of session id.
func (r *Router) loadPointer(ctx context.Context, ws, id string) (pointer, error) {
	e, err := r.cfg.Sessions.Get(ctx, sessionKey(ws, id))
	if isAbsent(err) {
		return pointer{}, notFound(ws, id)
	}
	if err != nil {
		return pointer{}, fmt.Errorf("read session %s/%s: %w", ws, id, err)
	}
	var p pointer
	if err := json.Unmarshal(e.Value(), &p); err != nil {
		return pointer{}, fmt.Errorf("decode session %s/%s: %w", ws, id, err)
	}
	return p, nil
}

// errRevision marks a compare-and-swap that lost to another writer.
var errRevision = errors.New("session changed since it was read")

// save writes st if its revision is still st.Revision (0: create), and
// sets st.Revision to the new one. A lost race is errRevision; creating an
// existing session is conflict/already_exists.
func (r *Router) save(ctx context.Context, st *State) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode session: %w", err)
	}
	key := sessionKey(st.Workspace, st.ID)
	var rev uint64
	if st.Revision == 0 {
		rev, err = r.cfg.Sessions.Create(ctx, key, b)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return wire.Errorf(wire.CodeConflict, wire.ReasonAlreadyExists, "session %q exists in workspace %q", st.ID, st.Workspace)
		}
	} else {
		rev, err = r.cfg.Sessions.Update(ctx, key, b, st.Revision)
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return errRevision
		}
	}
	if err != nil {
		return fmt.Errorf("write session %s/%s: %w", st.Workspace, st.ID, err)
	}
	st.Revision = rev
	return nil
}

// remove deletes st if its revision is still st.Revision.
func (r *Router) remove(ctx context.Context, st *State) error {
	err := r.cfg.Sessions.Delete(ctx, sessionKey(st.Workspace, st.ID), jetstream.LastRevision(st.Revision))
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return errRevision
	}
	if err != nil {
		return fmt.Errorf("delete session %s/%s: %w", st.Workspace, st.ID, err)
	}
	return nil
}

// list reads every session of ws, sorted by id.
func (r *Router) list(ctx context.Context, ws string) ([]*State, error) {
	w, err := r.cfg.Sessions.WatchFiltered(ctx, []string{ws + ".*"}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer w.Stop()
	out := []*State{}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok || e == nil { // nil marks the end of the current values
				slices.SortFunc(out, func(a, b *State) int { return cmp.Compare(a.ID, b.ID) })
				return out, nil
			}
			var st State
			if err := json.Unmarshal(e.Value(), &st); err != nil {
				return nil, fmt.Errorf("decode session %q: %w", e.Key(), err)
			}
			st.Revision = e.Revision()
			out = append(out, &st)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
