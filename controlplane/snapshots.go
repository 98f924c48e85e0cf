package controlplane

import (
	"net/http"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// routeSnapshots mounts the Snapshots calls of API.md.
func (s *Server) routeSnapshots(mux *http.ServeMux) {
	s.handleTarget(mux, "POST", "/snapshots", s.handleCreateSnapshot)
	s.handleTarget(mux, "POST", "/snapshots/{id}/restore", s.handleRestoreSnapshot)
	s.handle(mux, "GET /v1/workspaces/{ws}/snapshots", inWorkspace, s.handleListSnapshots)
	s.handle(mux, "DELETE /v1/workspaces/{ws}/snapshots/{id}", inWorkspace, s.handleDeleteSnapshot)
}

// handleCreateSnapshot serves POST {target}/snapshots → 201 Snapshot.
func (s *Server) handleCreateSnapshot(w http.ResponseWriter, r *http.Request, t target) error {
	var req client.CreateSnapshotRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	sp := snapshotSpec{ws: r.PathValue("ws"), agent: r.PathValue("agent"), kind: snapManual, req: req}
	if id := r.PathValue("session"); id != "" {
		st, err := s.pathSession(r).State(r.Context())
		if err != nil {
			return err
		}
		ag, _ := st.Agent(st.Active)
		sp.session, sp.agent, sp.backend = id, ag.ID, st.Active
	}
	sn, err := s.takeSnapshot(r.Context(), t, sp)
	if err != nil {
		return err
	}
	s.log.Info("snapshot taken", "ws", sp.ws, "snapshot", sn.ID, "agent", sn.Source.Agent, "files", sn.Files, "bytes", sn.Bytes, "newBytes", sn.NewBytes)
	writeJSON(w, http.StatusCreated, sn)
	return nil
}

// handleRestoreSnapshot serves POST {target}/snapshots/{id}/restore.
func (s *Server) handleRestoreSnapshot(w http.ResponseWriter, r *http.Request, t target) error {
	var req client.RestoreSnapshotRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := subjects.ValidateID(id); err != nil {
		return wire.Errorf(wire.CodeInvalidArgument, wire.ReasonInvalidID, "snapshot id: %v", err)
	}
	res, err := s.restoreSnapshot(r.Context(), t, r.PathValue("ws"), id, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) handleListSnapshots(w http.ResponseWriter, r *http.Request) error {
	snaps, err := s.snaps.list(r.Context(), r.PathValue("ws"))
	if err != nil {
		return err
	}
	if snaps == nil {
		snaps = []client.Snapshot{}
	}
	writeJSON(w, http.StatusOK, client.SnapshotList{Snapshots: snaps})
	return nil
}

func (s *Server) handleDeleteSnapshot(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := subjects.ValidateID(id); err != nil {
		return wire.Errorf(wire.CodeInvalidArgument, wire.ReasonInvalidID, "snapshot id: %v", err)
	}
	if err := s.snaps.remove(r.Context(), r.PathValue("ws"), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
