package controlplane

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// A public key names one agent for good. Public keys are not secret (they
// show in logs and JWTs), so an enrollment that names someone else's key
// must not bind it: revoking the newcomer would revoke the victim too.

// errKeyInUse refuses a public key that belongs to another agent or was
// ever revoked.
func errKeyInUse(why string) error {
	return wire.Errorf(wire.CodeConflict, wire.ReasonKeyInUse,
		"publicKey %s; make a new key pair (outpost agent enroll does) and enroll again", why)
}

// checkKeyFree refuses publicKey when it was ever revoked or is bound to an
// agent other than ag. An empty ag.ID (an id not chosen yet) matches no
// agent. It reads only, so it can run before a token is spent.
func (s *Server) checkKeyFree(ctx context.Context, publicKey string, ag subjects.Agent) error {
	var rev revocationRecord
	_, err := kvjson.Get(ctx, s.st.revocations, publicKey, &rev)
	if err == nil {
		return errKeyInUse("was revoked")
	}
	if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return err
	}
	var b keyBinding
	_, err = kvjson.Get(ctx, s.st.agentKeys, publicKey, &b)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil
	case err != nil:
		return err
	case b.agent() != ag:
		return errKeyInUse("is already bound to another agent")
	}
	return nil
}

// bindKey binds publicKey to ag, or confirms it is bound to ag already.
// Two enrollments racing with one key: exactly one binds it.
func (s *Server) bindKey(ctx context.Context, publicKey string, ag subjects.Agent) error {
	b := keyBinding{Workspace: ag.Workspace, Agent: ag.ID, BoundAt: time.Now().UTC()}
	_, err := kvjson.Create(ctx, s.st.agentKeys, publicKey, &b)
	if err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
		return err
	}
	return s.checkKeyFree(ctx, publicKey, ag)
}

// bindEnrolledKeys binds the key of every stored agent that has none yet:
// agents enrolled before keys were bound keep theirs.
func (s *Server) bindEnrolledKeys(ctx context.Context, recs []*agentRecord) error {
	for _, rec := range recs {
		if rec.PublicKey == "" {
			continue
		}
		_, err := kvjson.Create(ctx, s.st.agentKeys, rec.PublicKey, &keyBinding{Workspace: rec.Workspace, Agent: rec.ID, BoundAt: rec.EnrolledAt})
		if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
	}
	return nil
}
