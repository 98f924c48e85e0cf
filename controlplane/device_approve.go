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

func (s *Server) handleGetDeviceApproval(w http.ResponseWriter, r *http.Request) error {
	rec, _, _, err := s.findUserCode(r.Context(), r.PathValue("code"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.deviceApproval(rec, r.PathValue("code")))
	return nil
}

func (s *Server) handleDeviceApproval(w http.ResponseWriter, r *http.Request) error {
	var req client.DeviceApprovalRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	out, err := s.decideDeviceLogin(r.Context(), r.PathValue("ws"), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

var errUnknownUserCode = wire.Errorf(wire.CodeNotFound, "", "no pending device login with that user code (unknown, expired or already decided)")

// findUserCode reads the pending device request behind a user code as a
// person typed it. A code that finds none counts against the caller's
// guessing allowance; past it, every lookup is refused for a while.
func (s *Server) findUserCode(ctx context.Context, typed string) (*deviceRecord, string, uint64, error) {
	who := guessKey(ctx)
	if !s.limits.has(who, approvalGuessBurst, approvalGuessEvery) {
		return nil, "", 0, errTooManyGuesses
	}
	miss := func() (*deviceRecord, string, uint64, error) {
		s.limits.allow(who, approvalGuessBurst, approvalGuessEvery)
		return nil, "", 0, errUnknownUserCode
	}
	code, ok := enroll.NormalizeUserCode(typed)
	if !ok {
		return miss()
	}
	var idx userCodeRecord
	if _, err := kvjson.Get(ctx, s.st.device, userCodeKey(code), &idx); err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return miss()
		}
		return nil, "", 0, err
	}
	var rec deviceRecord
	rev, err := kvjson.Get(ctx, s.st.device, idx.Device, &rec)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return miss()
	}
	if err != nil {
		return nil, "", 0, err
	}
	if rec.State != deviceStatePending || !time.Now().Before(rec.ExpiresAt) {
		return miss()
	}
	return &rec, idx.Device, rev, nil
}

var errTooManyGuesses = wire.Errorf(wire.CodeUnavailable, wire.ReasonTooManyAttempts, "too many unknown user codes tried; wait a minute and check the code")

// guessKey is whose guessing allowance a lookup spends: the admin's, or
// the workspace key's workspace.
func guessKey(ctx context.Context) string {
	c := callerFrom(ctx)
	if c.admin {
		return "guess admin"
	}
	return "guess ws " + c.workspace
}

// decideDeviceLogin approves or denies the pending request showing
// req.UserCode, for workspace ws.
func (s *Server) decideDeviceLogin(ctx context.Context, ws string, req client.DeviceApprovalRequest) (*client.DeviceApproval, error) {
	for _, id := range []struct{ name, v string }{{"agent", req.Agent}, {"pool", req.Pool}} {
		if id.v != "" {
			if err := subjects.ValidateID(id.v); err != nil {
				return nil, wire.Errorf(wire.CodeInvalidArgument, wire.ReasonInvalidID, "%s: %v", id.name, err)
			}
		}
	}
	if req.Deny && (req.Agent != "" || req.Pool != "") {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "deny takes no agent or pool")
	}
	rec, key, rev, err := s.findUserCode(ctx, req.UserCode)
	if err != nil {
		return nil, err
	}
	rec.Workspace, rec.DecidedAt, rec.DecidedBy = ws, time.Now().UTC(), decider(ctx)
	if req.Deny {
		rec.State = deviceStateDenied
	} else if err := s.chooseDeviceAgent(ctx, rec, req); err != nil {
		return nil, err
	}
	if _, err := kvjson.Update(ctx, s.st.device, key, rec, rev); err != nil {
		if isRevisionMismatch(err) {
			return nil, wire.Errorf(wire.CodeConflict, "", "the device login was decided meanwhile")
		}
		return nil, err
	}
	s.log.Info("device login decided", "state", rec.State, "workspace", ws, "agent", rec.Agent, "hostname", rec.Hostname, "by", rec.DecidedBy)
	return s.deviceApproval(rec, req.UserCode), nil
}

// chooseDeviceAgent picks the agent id an approval enrolls: the one named
// (which may rotate an enrolled agent, as a token naming it would), else
// the machine's name when it is a free id, else a new one; and checks that
// the machine's key may be bound to it.
func (s *Server) chooseDeviceAgent(ctx context.Context, rec *deviceRecord, req client.DeviceApprovalRequest) error {
	rec.State, rec.Pool = deviceStateApproved, req.Pool
	ag := subjects.Agent{Workspace: rec.Workspace, ID: req.Agent}
	switch {
	case req.Agent != "":
		rec.Rotate = true
	case rec.Name != "" && subjects.ValidateID(rec.Name) == nil:
		ag.ID = rec.Name
		if taken, err := s.enrolledAgentExists(ctx, ag); err != nil || taken {
			if err != nil {
				return err
			}
			return wire.Errorf(wire.CodeConflict, wire.ReasonAlreadyExists,
				"agent %q is already enrolled in workspace %q; approve with --agent %s to give it this machine's key, or another --agent id", ag.ID, ag.Workspace, ag.ID)
		}
	default:
		prefix := "agent"
		if req.Pool != "" {
			prefix = req.Pool
		}
		id, err := s.newAgentID(ctx, rec.Workspace, prefix)
		if err != nil {
			return err
		}
		ag.ID = id
	}
	if err := s.checkKeyFree(ctx, rec.PublicKey, ag); err != nil {
		return err
	}
	rec.Agent = ag.ID
	return nil
}

// decider names the caller in the log: "admin" or the workspace key's
// workspace.
func decider(ctx context.Context) string {
	if c := callerFrom(ctx); !c.admin {
		return "key of " + c.workspace
	}
	return "admin"
}

func (s *Server) deviceApproval(rec *deviceRecord, typed string) *client.DeviceApproval {
	code, _ := enroll.NormalizeUserCode(typed)
	return &client.DeviceApproval{
		UserCode: code, State: rec.State,
		Name: rec.Name, Hostname: rec.Hostname, OS: rec.OS, Arch: rec.Arch, RemoteAddr: rec.RemoteAddr,
		PublicKey: rec.PublicKey, CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt,
		Workspace: rec.Workspace, Agent: rec.Agent, Pool: rec.Pool,
		CASHA256: s.CASHA256(),
	}
}
