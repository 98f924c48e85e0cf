package controlplane

import (
	"context"
	"fmt"
	"net/http"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/routing"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// startSessions makes the session router over the sessions and claims
// buckets, the rpc client and presence.
func (s *Server) startSessions() error {
	r, err := routing.New(routing.Config{
		Sessions: s.st.sessions,
		Claims:   s.st.claims,
		Presence: s.presence,
		Agents:   agentDirectory{s: s},
		RPC:      s.rpc,
		Dial:     servedOnly(routing.RPCDialer(s.rpc, routing.DefaultReadyTimeout), s),
		Logger:   s.log.With("component", "routing"),
		// A claimed pool agent is replaced only past presence's window.
		ReconnectWindow: s.cfg.PresenceWindow,
	})
	if err != nil {
		return fmt.Errorf("session router: %w", err)
	}
	s.sessions = r
	return nil
}

// servedOnly wraps dial's backends so that a session refuses calls to an
// agent whose protocol this control plane does not serve, as the agent
// target does (501 agent_too_old).
func servedOnly(dial routing.Dialer, s *Server) routing.Dialer {
	return func(ag subjects.Agent) routing.Backend { return servedBackend{Backend: dial(ag), s: s} }
}

// servedBackend checks the agent's last hello before each call.
type servedBackend struct {
	routing.Backend
	s *Server
}

func (b servedBackend) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	if err := tooOld(b.Agent(), b.s.presence.Get(b.Agent()).Hello); err != nil {
		return err
	}
	return b.Backend.Call(ctx, op, body, out, opts)
}

// agentDirectory is routing's view of the enrolled agents.
type agentDirectory struct{ s *Server }

func (d agentDirectory) Enrolled(ctx context.Context, ag subjects.Agent) (string, error) {
	rec, _, err := d.s.enrolledAgent(ctx, ag)
	if err != nil {
		return "", err
	}
	return rec.Pool, nil
}

func (d agentDirectory) PoolMembers(ctx context.Context, ws, pool string) ([]string, error) {
	recs, err := d.s.st.agentRecords(ctx, ws)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, rec := range recs {
		if rec.Pool == pool && !rec.Revoked {
			ids = append(ids, rec.ID)
		}
	}
	return ids, nil
}

func (s *Server) handleCreateSession(w http.ResponseWriter, r *http.Request) error {
	var req client.CreateSessionRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	specs := make(map[string]routing.Spec, len(req.Backends))
	for name, b := range req.Backends {
		specs[name] = routing.Spec{Kind: routing.Kind(b.Kind), Agent: b.Agent, Pool: b.Pool}
	}
	st, err := s.sessions.Create(r.Context(), r.PathValue("ws"), routing.CreateRequest{ID: req.ID, Backends: specs, Active: req.Active, SnapshotEveryMs: req.SnapshotEveryMs})
	if err != nil {
		return err
	}
	s.log.Info("session created", "ws", st.Workspace, "session", st.ID, "active", st.Active)
	writeJSON(w, http.StatusCreated, s.sessionJSON(st))
	return nil
}

func (s *Server) handleListSessions(w http.ResponseWriter, r *http.Request) error {
	sts, err := s.sessions.List(r.Context(), r.PathValue("ws"))
	if err != nil {
		return err
	}
	out := client.SessionList{Sessions: make([]client.Session, 0, len(sts))}
	for _, st := range sts {
		out.Sessions = append(out.Sessions, s.sessionJSON(st))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) handleGetSession(w http.ResponseWriter, r *http.Request) error {
	st, err := s.pathSession(r).State(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.sessionJSON(st))
	return nil
}

func (s *Server) handleSwapSession(w http.ResponseWriter, r *http.Request) error {
	var req client.SwapRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	if req.To == "" {
		return wire.Errorf(wire.CodeInvalidArgument, "", "swap needs \"to\", the backend to point at")
	}
	var ifEpoch uint64
	if req.IfEpoch != nil {
		if *req.IfEpoch == 0 {
			return wire.Errorf(wire.CodeInvalidArgument, "", "ifEpoch must be at least 1 (epochs start at 1)")
		}
		ifEpoch = *req.IfEpoch
	}
	sess := s.pathSession(r)
	opts := routing.SwapOptions{IfEpoch: ifEpoch}
	if req.Carry {
		opts.Carry = s.carry
	}
	st, err := sess.SwapWith(r.Context(), req.To, opts)
	if err != nil {
		return err
	}
	s.log.Info("session swapped", "ws", st.Workspace, "session", st.ID, "active", st.Active, "epoch", st.Epoch)
	writeJSON(w, http.StatusOK, s.sessionJSON(st))
	return nil
}

func (s *Server) handleDeleteSession(w http.ResponseWriter, r *http.Request) error {
	st, err := s.pathSession(r).State(r.Context())
	if err != nil {
		return err
	}
	if err := s.pathSession(r).Delete(r.Context()); err != nil {
		return err
	}
	if err := s.deleteSessionLinks(r.Context(), r.PathValue("ws"), r.PathValue("session")); err != nil {
		// The links are dead anyway (linkTarget checks the session).
		s.log.Warn("session deleted; its preview links were not", "ws", r.PathValue("ws"), "session", r.PathValue("session"), "err", err)
	}
	// Its periodic and carry snapshots go with it (docs/API.md).
	s.prevChunks.drop(st.Workspace, st.ID)
	if err := s.snaps.removeSession(r.Context(), st.Workspace, st.ID, st.UID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) pathSession(r *http.Request) *routing.Session {
	return s.sessions.Session(r.PathValue("ws"), r.PathValue("session"))
}

// sessionJSON renders a session with the live presence of its agents.
func (s *Server) sessionJSON(st *routing.State) client.Session {
	out := client.Session{
		ID: st.ID, Active: st.Active, Epoch: st.Epoch, CreatedAt: st.CreatedAt,
		Backends:        make(map[string]client.SessionBackend, len(st.Backends)),
		Transitions:     append([]client.Transition{}, st.Transitions...),
		SnapshotEveryMs: st.SnapshotEveryMs, LastCarry: st.LastCarry,
	}
	for name, spec := range st.Backends {
		b := client.SessionBackend{Kind: string(spec.Kind), Agent: spec.Agent, Pool: spec.Pool}
		if spec.Kind == routing.KindPool {
			b.Claimed = st.Claims[name]
		}
		if ag, ok := st.Agent(name); ok {
			b.Status = string(s.presence.Get(ag).Status)
		}
		out.Backends[name] = b
	}
	return out
}
