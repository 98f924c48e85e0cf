package controlplane

import (
	"context"
	"errors"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/routing"
	"github.com/outposthq/outpost/rpc"
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
	dst := carryTarget{agentTarget: agentTarget{rpc: s.rpc, ag: to}, s: s, st: st}
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

// carryTarget is the agent a carry restores onto. Every step of the
// restore but its abort carries the session's UID and the epoch the carry
// started from, so the agent's fence refuses it once a request at a newer
// epoch of the session reached that agent, and a step under way then
// (its writes) ends before that request runs (delivery.AdmitHeld): a
// restore never writes over what was written at the newer epoch. The
// fence is in the agent's memory; an agent that restarted forgot it, but
// also every restore begun before (its handles), and once a restore is
// begun the session is read again (checkBegun): if the pointer moved
// already, the restore is aborted before it wrote anything.
type carryTarget struct {
	agentTarget
	s  *Server
	st *routing.State
}

func (t carryTarget) Epoch() uint64 { return t.st.Epoch }

// Concurrent is t: its calls touch no response.
func (t carryTarget) Concurrent() target { return t }

func (t carryTarget) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	if op == wire.OpSnapRestoreAbort {
		// Outside the session: an abort discards the restore's own
		// temporary files, also once the fence is raised.
		return t.agentTarget.Call(ctx, op, body, out, opts)
	}
	opts.Session, opts.Epoch = t.st.UID, t.st.Epoch
	if err := t.agentTarget.Call(ctx, op, body, out, opts); err != nil {
		return err
	}
	if op == wire.OpSnapRestoreBegin {
		return t.checkBegun(ctx, out.(*wire.FsUploadBeginResult).Handle)
	}
	return nil
}

// checkBegun reads the session once restore h was begun (which raised
// the agent's fence to the carry's epoch, in the agent's memory now) and
// aborts it if the session moved on: a request at the newer epoch may
// have run on the agent before it restarted and forgot its fence. After
// this read a newer epoch can reach the agent only through its fence,
// unless the agent restarts again, which ends the restore.
func (t carryTarget) checkBegun(ctx context.Context, h string) error {
	cur, err := t.s.sessions.Session(t.st.Workspace, t.st.ID).State(ctx)
	if err == nil && (cur.UID != t.st.UID || cur.Epoch != t.st.Epoch) {
		err = wire.Errorf(wire.CodeConflict, wire.ReasonEpochMismatch,
			"session %s moved to epoch %d while the carry from epoch %d began its restore", t.st.ID, cur.Epoch, t.st.Epoch)
	}
	if err != nil {
		t.s.newRelay(t).cleanup(ctx, wire.OpSnapRestoreAbort, h)
	}
	return err
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
