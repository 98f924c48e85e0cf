package controlplane

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// CreateWorkspace creates workspace id; an existing one is
// conflict/already_exists.
func (s *Server) CreateWorkspace(ctx context.Context, id string) (*client.Workspace, error) {
	if err := subjects.ValidateID(id); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, wire.ReasonInvalidID, "workspace id: %v", err)
	}
	rec := workspaceRecord{ID: id, CreatedAt: time.Now().UTC()}
	if _, err := kvjson.Create(ctx, s.st.workspaces, id, &rec); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil, wire.Errorf(wire.CodeConflict, wire.ReasonAlreadyExists, "workspace %q exists", id)
		}
		return nil, err
	}
	s.log.Info("workspace created", "ws", id)
	return rec.api(), nil
}

// workspace reads workspace id; an absent one is not_found.
func (s *Server) workspace(ctx context.Context, id string) (*client.Workspace, error) {
	var rec workspaceRecord
	if err := s.getWorkspace(ctx, id, &rec); err != nil {
		return nil, err
	}
	return rec.api(), nil
}

// workspaceExists is workspace for callers that need only to know that it
// exists (every authorized call): the record is read but not decoded into
// its fields.
func (s *Server) workspaceExists(ctx context.Context, id string) error {
	var rec struct{}
	return s.getWorkspace(ctx, id, &rec)
}

// getWorkspace reads workspace id's record into rec; an absent one is
// not_found.
func (s *Server) getWorkspace(ctx context.Context, id string, rec any) error {
	_, err := kvjson.Get(ctx, s.st.workspaces, id, rec)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return workspaceNotFound(id)
	}
	return err
}

// workspaceNotFound is the not_found of an absent workspace.
func workspaceNotFound(id string) error {
	return wire.Errorf(wire.CodeNotFound, "", "workspace %q not found", id)
}

// CreateKey makes a new API key of workspace ws and returns it with its
// token, shown only this once; only the token's hash is kept.
func (s *Server) CreateKey(ctx context.Context, ws string) (*client.Key, error) {
	if _, err := s.workspace(ctx, ws); err != nil {
		return nil, err
	}
	plain, hash, err := enroll.NewAPIKey()
	if err != nil {
		return nil, err
	}
	rec := keyRecord{ID: newRecordID(keyIDPrefix), Workspace: ws, CreatedAt: time.Now().UTC()}
	if _, err := kvjson.Create(ctx, s.st.apiKeys, hashKey(hash), &rec); err != nil {
		return nil, err
	}
	s.log.Info("workspace key created", "ws", ws, "key", rec.ID)
	return &client.Key{ID: rec.ID, Token: plain}, nil
}

func (s *Server) handleCreateWorkspace(w http.ResponseWriter, r *http.Request) error {
	var req client.CreateWorkspaceRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	out, err := s.CreateWorkspace(r.Context(), req.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) handleGetWorkspace(w http.ResponseWriter, r *http.Request) error {
	out, err := s.workspace(r.Context(), r.PathValue("ws"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) handleCreateKey(w http.ResponseWriter, r *http.Request) error {
	var req client.CreateKeyRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	key, err := s.CreateKey(r.Context(), r.PathValue("ws"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, key)
	return nil
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, client.Health{Status: "ok"})
	return nil
}
