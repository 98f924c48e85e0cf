package controlplane

import (
	"context"
	"errors"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/routing"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// carry moves a session's workspace onto agent to before a swap moves the
// pointer (routing.CarryFunc): the old backend's root is snapshotted when
// it is online; when it is offline (or goes offline during the snapshot),
// the session's latest snapshot is used instead, and none is 409
// no_snapshot. The snapshot is restored onto to with delete, so the new
// backend's root is the old one's.
func (s *Server) carry(ctx context.Context, st *routing.State, to subjects.Agent) (*routing.Carry, error) {
	from, ok := st.Agent(st.Active)
	dst := agentTarget{rpc: s.rpc, ag: to}
	if ok && s.presence.Get(from).Status == presence.Online {
		sn, res, err := s.snapshotOnto(ctx, agentTarget{rpc: s.rpc, ag: from}, snapshotSpec{
			ws: st.Workspace, agent: from.ID, session: st.ID, backend: st.Active, kind: snapCarry}, dst)
		switch {
		case err == nil:
			return s.carried(st, to, sn, res), nil
		case sn == nil && errors.Is(err, wire.ErrUnavailable) && s.presence.Get(from).Status != presence.Online:
			s.log.Info("carry: the old backend went away during its snapshot; using the latest", "session", st.ID, "backend", st.Active, "err", err)
		default:
			return nil, err
		}
	}
	var sn *client.Snapshot
	if sn == nil {
		var err error
		if sn, err = s.latestSnapshot(ctx, st.Workspace, st.ID); err != nil {
			return nil, err
		}
		if sn == nil {
			return nil, wire.Errorf(wire.CodeConflict, wire.ReasonNoSnapshot,
				"session %s: backend %s is offline and the session has no snapshot to carry (set snapshotEveryMs to take them in the background); the pointer stays", st.ID, st.Active)
		}
	}
	res, err := s.restoreSnapshot(ctx, dst, st.Workspace, sn.ID, client.RestoreSnapshotRequest{Delete: true})
	if err != nil {
		return nil, err
	}
	return s.carried(st, to, sn, res), nil
}

// carried logs a carry and says what it moved.
func (s *Server) carried(st *routing.State, to subjects.Agent, sn *client.Snapshot, res *client.RestoreResult) *routing.Carry {
	s.log.Info("carried", "session", st.ID, "snapshot", sn.ID, "from", sn.Backend, "to", to.ID, "files", res.Files, "transferredBytes", res.TransferredBytes)
	return &routing.Carry{Snapshot: sn.ID, From: sn.Backend, TakenAt: sn.CreatedAt, Files: res.Files, TransferredBytes: res.TransferredBytes}
}

// latestSnapshot is the newest snapshot the session took (periodic or
// carry, or through the session's target), or nil.
func (s *Server) latestSnapshot(ctx context.Context, ws, session string) (*client.Snapshot, error) {
	snaps, err := s.snaps.list(ctx, ws)
	if err != nil {
		return nil, err
	}
	for i := len(snaps) - 1; i >= 0; i-- {
		if snaps[i].Session == session {
			return &snaps[i], nil
		}
	}
	return nil, nil
}
