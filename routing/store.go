package routing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/wire"
)

func sessionKey(ws, id string) string { return ws + "." + id }

func notFound(ws, id string) error {
	return wire.Errorf(wire.CodeNotFound, "", "session %q not found in workspace %q", id, ws)
}

// load reads session id of ws with its revision.
func (r *Router) load(ctx context.Context, ws, id string) (*State, error) {
	var st State
	rev, err := kvjson.Get(ctx, r.cfg.Sessions, sessionKey(ws, id), &st)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, notFound(ws, id)
	}
	if err != nil {
		return nil, err
	}
	st.Revision = rev
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
	var p pointer
	_, err := kvjson.Get(ctx, r.cfg.Sessions, sessionKey(ws, id), &p)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return pointer{}, notFound(ws, id)
	}
	if err != nil {
		return pointer{}, err
	}
	return p, nil
}

// errRevision marks a compare-and-swap that lost to another writer.
var errRevision = errors.New("session changed since it was read")

// save writes st if its revision is still st.Revision (0: create), and
// sets st.Revision to the new one. A lost race is errRevision; creating an
// existing session is conflict/already_exists.
func (r *Router) save(ctx context.Context, st *State) error {
	rev, err := kvjson.Update(ctx, r.cfg.Sessions, sessionKey(st.Workspace, st.ID), st, st.Revision)
	switch {
	case err == nil:
		st.Revision = rev
		return nil
	case st.Revision == 0 && errors.Is(err, jetstream.ErrKeyExists):
		return wire.Errorf(wire.CodeConflict, wire.ReasonAlreadyExists, "session %q exists in workspace %q", st.ID, st.Workspace)
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return errRevision
	}
	return err
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
	out := []*State{}
	err := kvjson.List(ctx, r.cfg.Sessions, ws+".*", func(_ string, rev uint64, st *State) {
		st.Revision = rev
		out = append(out, st)
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b *State) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}
