package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/authority"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// enrolledAgent reads the record of an enrolled, not revoked agent; anything
// else is not_found. It says nothing about whether the agent is online.
func (s *Server) enrolledAgent(ctx context.Context, ag subjects.Agent) (*agentRecord, uint64, error) {
	var rec agentRecord
	rev, err := kvjson.Get(ctx, s.st.agents, agentKey(ag), &rec)
	if errors.Is(err, jetstream.ErrKeyNotFound) || err == nil && rec.Revoked {
		return nil, 0, notEnrolled(ag)
	}
	if err != nil {
		return nil, 0, err
	}
	return &rec, rev, nil
}

// agentEnrolled is enrolledAgent for callers that need only its answer:
// every call through /agents/{agent} asks, and it decodes the record's
// revoked flag alone instead of the whole record (its capabilities map,
// times and strings were a large share of what a call allocated).
func (s *Server) agentEnrolled(ctx context.Context, ag subjects.Agent) error {
	var rec struct {
		Revoked bool `json:"revoked"`
	}
	_, err := kvjson.Get(ctx, s.st.agents, agentKey(ag), &rec)
	if errors.Is(err, jetstream.ErrKeyNotFound) || err == nil && rec.Revoked {
		return notEnrolled(ag)
	}
	return err
}

// notEnrolled is the not_found of an agent that is not enrolled (or was
// revoked).
func notEnrolled(ag subjects.Agent) error {
	return wire.Errorf(wire.CodeNotFound, "", "agent %q is not enrolled in workspace %q", ag.ID, ag.Workspace)
}

// tooOld is the error of calls to an agent whose hello says it speaks a
// protocol this control plane no longer serves; nil when it is served.
func tooOld(ag subjects.Agent, h *wire.Hello) *wire.Error {
	if h == nil || wire.Speaks(h.Protocol) {
		return nil
	}
	if h.Protocol > wire.Version {
		return wire.Errorf(wire.CodeUnsupported, wire.ReasonAgentTooOld,
			"agent %s speaks protocol %d, newer than this control plane's %d: update the control plane", ag.ID, h.Protocol, wire.Version)
	}
	return wire.Errorf(wire.CodeUnsupported, wire.ReasonAgentTooOld,
		"agent %s (version %q) speaks protocol %d; this control plane serves protocols %d to %d: update the agent (it updates itself from the control plane's releases, or reinstall it)",
		ag.ID, h.Version, h.Protocol, wire.OldestVersion, wire.Version)
}

// agentJSON renders a record with its live presence.
func (s *Server) agentJSON(rec *agentRecord) client.Agent {
	out := client.Agent{
		ID:           rec.ID,
		Name:         rec.Name,
		Pool:         rec.Pool,
		Status:       client.StatusOffline,
		LastSeen:     rec.LastSeen,
		Version:      rec.Version,
		Protocol:     rec.Protocol,
		OS:           rec.OS,
		Arch:         rec.Arch,
		Hostname:     rec.Hostname,
		Capabilities: rec.Capabilities,
		EnrolledAt:   rec.EnrolledAt,
	}
	e := s.presence.Get(rec.agent())
	if st := string(e.Status); st != "" {
		out.Status = st
	}
	if e.LastSeen.After(out.LastSeen) {
		out.LastSeen = e.LastSeen
	}
	if h := e.Hello; h != nil {
		out.Version, out.OS, out.Arch, out.Hostname = h.Version, h.OS, h.Arch, h.Hostname
		out.Capabilities, out.Policy, out.Protocol = h.Capabilities, h.Policy, h.Protocol
		if err := tooOld(rec.agent(), h); err != nil {
			out.StatusDetail = err.Message
		}
	}
	out.Paused = e.Paused && e.Status == presence.Online
	if out.Capabilities == nil {
		out.Capabilities = map[string]bool{}
	}
	out.LastSeen = out.LastSeen.UTC()
	return out
}

func (s *Server) handleListAgents(w http.ResponseWriter, r *http.Request) error {
	recs, err := s.st.agentRecords(r.Context(), r.PathValue("ws"))
	if err != nil {
		return err
	}
	out := client.AgentList{Agents: []client.Agent{}}
	for _, rec := range recs {
		if !rec.Revoked {
			out.Agents = append(out.Agents, s.agentJSON(rec))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) handleGetAgent(w http.ResponseWriter, r *http.Request) error {
	rec, _, err := s.enrolledAgent(r.Context(), pathAgent(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.agentJSON(rec))
	return nil
}

func (s *Server) handleRevokeAgent(w http.ResponseWriter, r *http.Request) error {
	if err := s.RevokeAgent(r.Context(), pathAgent(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func pathAgent(r *http.Request) subjects.Agent {
	return subjects.Agent{Workspace: r.PathValue("ws"), ID: r.PathValue("agent")}
}

// RevokeAgent revokes an enrolled agent: its public key joins the account's
// revocations (pushed at once, which closes its connection and refuses its
// reconnects), its record is marked revoked and presence forgets it.
func (s *Server) RevokeAgent(ctx context.Context, ag subjects.Agent) error {
	for attempt := 0; ; attempt++ {
		rec, rev, err := s.enrolledAgent(ctx, ag)
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		rec.Revoked, rec.RevokedAt = true, now
		if _, err := kvjson.Update(ctx, s.st.agents, agentKey(ag), rec, rev); err != nil {
			if attempt < 5 && isRevisionMismatch(err) {
				continue
			}
			return err
		}
		if err := s.changeRevocations(ctx, []revocationChange{{key: rec.PublicKey, rec: &revocationRecord{RevokedAt: now.Unix(), Workspace: ag.Workspace, Agent: ag.ID}}}); err != nil {
			return err
		}
		s.presence.Forget(ag)
		s.log.Info("agent revoked", "agent", ag)
		return nil
	}
}

// revocationChange adds one public key to the revocations.
type revocationChange struct {
	key string
	rec *revocationRecord
}

// changeRevocations applies changes to the revocations bucket and, when
// anything changed, pushes the account JWT with every revocation.
func (s *Server) changeRevocations(ctx context.Context, changes []revocationChange) error {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	changed := false
	for _, c := range changes {
		if _, err := kvjson.Put(ctx, s.st.revocations, c.key, c.rec); err != nil {
			return err
		}
		changed = true
	}
	if !changed {
		return nil
	}
	return s.pushAccountLocked(ctx)
}

// pushAccounts pushes both application accounts' JWTs at start: the app
// account's carries the cut-off of agents enrolled under the old layout (an
// external server keeps what it stored before), the agents' account's the
// current revocations.
func (s *Server) pushAccounts(ctx context.Context) error {
	appJWT, err := s.auth.AccountJWT()
	if err != nil {
		return err
	}
	if err := authority.PushAccount(ctx, s.sysNC, appJWT); err != nil {
		return fmt.Errorf("push app account jwt: %w", err)
	}
	return s.pushAccount(ctx)
}

// pushAccount pushes the agents' account JWT with the current revocations.
func (s *Server) pushAccount(ctx context.Context) error {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	return s.pushAccountLocked(ctx)
}

func (s *Server) pushAccountLocked(ctx context.Context) error {
	revoked, err := s.st.revokedKeys(ctx)
	if err != nil {
		return err
	}
	accountJWT, err := s.auth.AgentsAccountJWT(revoked)
	if err != nil {
		return fmt.Errorf("agents account jwt: %w", err)
	}
	if err := authority.PushAccount(ctx, s.sysNC, accountJWT); err != nil {
		return fmt.Errorf("push agents account jwt: %w", err)
	}
	return nil
}

// startPresence starts the tracker seeded with every stored agent, and the
// writer that keeps lastSeen and hello facts in KV.
func (s *Server) startPresence(ctx context.Context) error {
	s.presence = presence.New(presence.Config{Window: s.cfg.PresenceWindow, Logger: s.log.With("component", "presence")})
	var recs []*agentRecord
	err := untilReady(ctx, func(ctx context.Context) error {
		recs = recs[:0]
		return kvjson.List(ctx, s.st.agents, ">", func(_ string, _ uint64, rec *agentRecord) {
			if !rec.Revoked {
				recs = append(recs, rec)
			}
		})
	})
	if err != nil {
		return err
	}
	if err := s.bindEnrolledKeys(ctx, recs); err != nil {
		return fmt.Errorf("bind enrolled keys: %w", err)
	}
	// An agent's record has its lastSeen as of its last presence change;
	// the lastSeen bucket has it as of the last snapshot (a minute at most
	// before a stop without Close).
	seen, err := s.lastSeenSnapshots(ctx)
	if err != nil {
		// The store answered the list above. A snapshot keeps the newer of
		// its stored times and presence's, so the records' older ones do
		// not overwrite what this could not read.
		s.log.Warn("read agents' lastSeen; using their records'", "err", err)
	}
	for _, rec := range recs {
		at := rec.LastSeen
		if t := seen[rec.agent()]; t.After(at) {
			at = t
		}
		s.presence.Seed(rec.agent(), at, rec.hello())
	}
	s.seen = newSeenWriter(s)
	s.presence.OnChange(func(ag subjects.Agent, _ presence.Entry) { s.seen.mark(ag) })
	if err := s.presence.Start(s.agentNC); err != nil {
		return fmt.Errorf("presence: %w", err)
	}
	// The servers' disconnect events tell at once when an agent's
	// connection closes, so agents can heartbeat slowly.
	if err := s.presence.WatchDisconnects(s.sysNC, s.auth.AgentsAccountPublicKey()); err != nil {
		return fmt.Errorf("presence: %w", err)
	}
	return nil
}

// hello rebuilds the stored facts of the latest hello, nil if none.
func (a *agentRecord) hello() *wire.Hello {
	if a.Instance == "" && a.Version == "" {
		return nil
	}
	// The stored protocol, so that an agent seeded into presence after a
	// restart is not taken for one too old to serve (protocol 0) until its
	// next hello. A record stored before control planes kept the protocol
	// was served then, by a control plane of protocol 1: it is taken as
	// speaking this one until a live hello says otherwise.
	proto := a.Protocol
	if proto == 0 {
		proto = wire.Version
	}
	return &wire.Hello{
		Workspace: a.Workspace, Agent: a.ID, Instance: a.Instance, Version: a.Version,
		Protocol: proto, OS: a.OS, Arch: a.Arch, Hostname: a.Hostname, Capabilities: a.Capabilities,
	}
}
