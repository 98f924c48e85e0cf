package controlplane

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// DefaultTokenTTL is an enrollment token's life when the request names none.
const DefaultTokenTTL = 900 * time.Second

// CreateEnrollmentToken makes a single-use enrollment token for workspace
// ws. Only its hash is kept.
func (s *Server) CreateEnrollmentToken(ctx context.Context, ws string, req client.EnrollmentTokenRequest) (*client.EnrollmentToken, error) {
	if req.Agent != "" {
		if err := subjects.ValidateID(req.Agent); err != nil {
			return nil, wire.Errorf(wire.CodeInvalidArgument, wire.ReasonInvalidID, "agent: %v", err)
		}
	}
	if req.Pool != "" {
		if err := subjects.ValidateID(req.Pool); err != nil {
			return nil, wire.Errorf(wire.CodeInvalidArgument, wire.ReasonInvalidID, "pool: %v", err)
		}
	}
	ttl := DefaultTokenTTL
	switch {
	case req.TTLSeconds < 0:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "ttlSeconds must not be negative")
	case req.TTLSeconds > int64(maxTokenTTL/time.Second):
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "ttlSeconds must be at most %d", int64(maxTokenTTL/time.Second))
	case req.TTLSeconds > 0:
		ttl = time.Duration(req.TTLSeconds) * time.Second
	}
	if _, err := s.workspace(ctx, ws); err != nil {
		return nil, err
	}
	plain, hash, err := enroll.NewToken()
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	rec := tokenRecord{ID: newRecordID(tokenIDPrefix), Workspace: ws, Agent: req.Agent, Pool: req.Pool, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	if _, err := kvjson.Create(ctx, s.st.tokens, hashKey(hash), &rec); err != nil {
		return nil, err
	}
	return &client.EnrollmentToken{ID: rec.ID, Token: plain, ExpiresAt: rec.ExpiresAt,
		CASHA256: s.CASHA256(), EnrollCommand: s.enrollCommand(plain)}, nil
}

// enrollCommand is the line a user pastes on the machine to enroll it with
// token: the public URL, the CA pin when there is one, and a config path.
func (s *Server) enrollCommand(token string) string {
	cmd := "outpost agent enroll --url " + shellQuote(s.PublicURL()) + " --token " + token
	if pin := s.CASHA256(); pin != "" {
		cmd += " --ca-sha256 " + pin
	}
	return cmd + " --config ~/.outpost/agent.json"
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe
// characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@%+=,[]") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (s *Server) handleCreateEnrollmentToken(w http.ResponseWriter, r *http.Request) error {
	var req client.EnrollmentTokenRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	out, err := s.CreateEnrollmentToken(r.Context(), r.PathValue("ws"), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) handleEnroll(w http.ResponseWriter, r *http.Request) error {
	var req enroll.Request
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	out, err := s.enroll(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

var errBadToken = wire.Errorf(wire.CodeUnauthenticated, "", "unknown, expired or used enrollment token")

// enroll redeems a token for credentials of the request's public key.
func (s *Server) enroll(ctx context.Context, req enroll.Request) (*enroll.Response, error) {
	// Check the request before the token is spent, so a typo does not cost
	// a token.
	if req.Token == "" {
		return nil, wire.Errorf(wire.CodeUnauthenticated, "", "missing enrollment token")
	}
	if !nkeys.IsValidPublicUserKey(req.PublicKey) {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "publicKey must be an nkey user public key (U...)")
	}
	if err := checkMachineFields(req.Name, req.Hostname, req.OS, req.Arch); err != nil {
		return nil, err
	}

	nameAsID := req.Name != "" && subjects.ValidateID(req.Name) == nil
	tok, err := s.redeemToken(ctx, req.Token, func(tok *tokenRecord) error {
		// The agent this enrollment will make (an empty id: one not chosen
		// yet, which no bound key matches).
		ag := subjects.Agent{Workspace: tok.Workspace, ID: tok.Agent}
		if ag.ID == "" && nameAsID {
			ag.ID = req.Name
		}
		if err := s.checkKeyFree(ctx, req.PublicKey, ag); err != nil {
			return err
		}
		if tok.Agent != "" || !nameAsID {
			return nil
		}
		// A token that names no agent enrolls a new one: it may not take
		// over an enrolled agent by naming it (that needs a token naming
		// it). Checked before the token is spent, so the user can retry.
		if taken, err := s.enrolledAgentExists(ctx, ag); err != nil || taken {
			return cmp.Or(err, errNameTaken(ag))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	id := tok.Agent
	if id == "" && nameAsID {
		id = req.Name
	}
	if id == "" {
		prefix := "agent"
		if tok.Pool != "" {
			prefix = tok.Pool
		}
		if id, err = s.newAgentID(ctx, tok.Workspace, prefix); err != nil {
			return nil, err
		}
	}
	return s.issueEnrollment(ctx, subjects.Agent{Workspace: tok.Workspace, ID: id}, tok, req)
}

// issueEnrollment binds req's public key to ag, issues its credentials and
// stores (or rotates) its record: the end of an enrollment by token or by
// device login. tok says how it was authorized (its Agent set: rotation
// of that agent allowed).
func (s *Server) issueEnrollment(ctx context.Context, ag subjects.Agent, tok *tokenRecord, req enroll.Request) (*enroll.Response, error) {
	if err := s.bindKey(ctx, req.PublicKey, ag); err != nil {
		return nil, err
	}
	userJWT, err := s.auth.IssueAgentJWT(ag, req.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("issue agent credentials: %w", err)
	}
	rec, err := s.storeEnrolled(ctx, ag, tok, req)
	if err != nil {
		return nil, err
	}
	s.log.Info("agent enrolled", "agent", ag, "pool", rec.Pool)
	return &enroll.Response{
		Workspace: ag.Workspace,
		Agent:     ag.ID,
		Pool:      rec.Pool,
		JWT:       userJWT,
		NATSURLs:  s.NATSURLs(),
	}, nil
}

// redeemToken marks the token used with a compare-and-set on the revision
// it was read at, so of two concurrent uses exactly one succeeds.
// check runs on a valid token before it is spent; its error is returned and
// leaves the token unused.
func (s *Server) redeemToken(ctx context.Context, plain string, check func(*tokenRecord) error) (*tokenRecord, error) {
	key := hashKey(enroll.HashToken(plain))
	var tok tokenRecord
	rev, err := kvjson.Get(ctx, s.st.tokens, key, &tok)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, errBadToken
	}
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	if tok.Used || !now.Before(tok.ExpiresAt) {
		return nil, errBadToken
	}
	if _, err := s.workspace(ctx, tok.Workspace); err != nil {
		return nil, errBadToken // the workspace went away
	}
	if err := check(&tok); err != nil {
		return nil, err
	}
	tok.Used, tok.UsedAt = true, now
	if _, err := kvjson.Update(ctx, s.st.tokens, key, &tok, rev); err != nil {
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return nil, errBadToken // someone else used it first
		}
		return nil, err
	}
	return &tok, nil
}

// newAgentID picks "<prefix>-<6 hex>" not yet taken in ws.
func (s *Server) newAgentID(ctx context.Context, ws, prefix string) (string, error) {
	for range 16 {
		var b [3]byte
		_, _ = rand.Read(b[:])
		id := prefix + "-" + hex.EncodeToString(b[:])
		if len(id) > subjects.MaxIDLen {
			id = id[len(id)-subjects.MaxIDLen:]
		}
		var rec agentRecord
		_, err := kvjson.Get(ctx, s.st.agents, agentKey(subjects.Agent{Workspace: ws, ID: id}), &rec)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return id, nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", wire.Errorf(wire.CodeInternal, "", "no free agent id with prefix %q", prefix)
}

// storeEnrolled creates or rotates the agent record. Rotation revokes the
// previous public key and pushes the account JWT, so the old credentials
// stop working at once.
func (s *Server) storeEnrolled(ctx context.Context, ag subjects.Agent, tok *tokenRecord, req enroll.Request) (*agentRecord, error) {
	key := agentKey(ag)
	for attempt := 0; ; attempt++ {
		var old agentRecord
		rev, err := kvjson.Get(ctx, s.st.agents, key, &old)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			rev = 0
		case err != nil:
			return nil, err
		}
		if rev != 0 && !old.Revoked && tok.Agent == "" {
			return nil, errNameTaken(ag)
		}
		now := time.Now().UTC()
		rec := agentRecord{
			Workspace:  ag.Workspace,
			ID:         ag.ID,
			Name:       req.Name,
			Pool:       tok.Pool,
			PublicKey:  req.PublicKey,
			EnrolledAt: now,
			Hostname:   req.Hostname,
			OS:         req.OS,
			Arch:       req.Arch,
		}
		if rec.Name == "" {
			rec.Name = ag.ID
		}
		if rev != 0 && !old.Revoked {
			// Rotation keeps what is known of the machine until its next hello.
			if rec.Pool == "" {
				rec.Pool = old.Pool
			}
			rec.LastSeen = old.LastSeen
			rec.Version, rec.Capabilities = old.Version, old.Capabilities
			rec.Hostname = firstNonEmpty(rec.Hostname, old.Hostname)
			rec.OS = firstNonEmpty(rec.OS, old.OS)
			rec.Arch = firstNonEmpty(rec.Arch, old.Arch)
		}
		_, err = kvjson.Update(ctx, s.st.agents, key, &rec, rev)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) && attempt < 5 {
			continue
		}
		if err != nil {
			return nil, err
		}
		var changes []revocationChange
		if rev != 0 && !old.Revoked && old.PublicKey != "" && old.PublicKey != req.PublicKey {
			changes = append(changes, revocationChange{key: old.PublicKey, rec: &revocationRecord{RevokedAt: now.Unix(), Workspace: ag.Workspace, Agent: ag.ID}})
		}
		if err := s.changeRevocations(ctx, changes); err != nil {
			return nil, err
		}
		if rev != 0 && !old.Revoked && old.PublicKey != req.PublicKey {
			s.log.Info("agent credentials rotated", "agent", ag)
		}
		return &rec, nil
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// errNameTaken refuses a token that names no agent the takeover of an
// enrolled one.
func errNameTaken(ag subjects.Agent) error {
	return wire.Errorf(wire.CodeConflict, wire.ReasonAlreadyExists,
		"agent %q is already enrolled in workspace %q; to re-enroll it, use an enrollment token created for that agent", ag.ID, ag.Workspace)
}

// enrolledAgentExists reports whether ag is enrolled and not revoked.
func (s *Server) enrolledAgentExists(ctx context.Context, ag subjects.Agent) (bool, error) {
	err := s.agentEnrolled(ctx, ag)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, wire.ErrNotFound) {
		return false, nil
	}
	return false, err
}
