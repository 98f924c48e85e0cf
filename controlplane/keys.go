package controlplane

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Id prefixes of workspace keys and enrollment tokens. An id names a
// secret in the API (to list and revoke it) and reveals nothing of it.
const (
	keyIDPrefix   = "key_"
	tokenIDPrefix = "tok_"
)

// newRecordID is a random id: prefix and 20 hex digits (80 bits).
func newRecordID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// recordID is the id of the record stored under kvKey: its own, or for a
// record made before ids one derived from kvKey (the secret's hash), the
// same every time, from which neither the hash nor the secret follows.
func recordID(prefix, id, kvKey string) string {
	if id != "" {
		return id
	}
	sum := sha256.Sum256([]byte("outpost record id\x00" + kvKey))
	return prefix + hex.EncodeToString(sum[:10])
}

// pathRecordID is the {id} of a key or token path, validated.
func pathRecordID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := subjects.ValidateID(id); err != nil {
		return "", wire.Errorf(wire.CodeInvalidArgument, wire.ReasonInvalidID, "id: %v", err)
	}
	return id, nil
}

// ListKeys lists the keys of workspace ws, oldest first, never their
// secrets.
func (s *Server) ListKeys(ctx context.Context, ws string) ([]client.KeyInfo, error) {
	out := []client.KeyInfo{}
	err := kvjson.List(ctx, s.st.apiKeys, ">", func(kvKey string, _ uint64, k *keyRecord) {
		if k.Workspace == ws {
			out = append(out, client.KeyInfo{ID: recordID(keyIDPrefix, k.ID, kvKey), CreatedAt: k.CreatedAt, LastUsed: k.LastUsed})
		}
	})
	slices.SortFunc(out, func(a, b client.KeyInfo) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, err
}

// DeleteKey deletes the key id of workspace ws: it stops working at once.
func (s *Server) DeleteKey(ctx context.Context, ws, id string) error {
	kvKey, err := s.findRecord(ctx, ws, id, false)
	if err != nil {
		return err
	}
	if err := s.st.apiKeys.Delete(ctx, kvKey); err != nil {
		return err
	}
	s.log.Info("workspace key deleted", "ws", ws, "key", id)
	return nil
}

// ListEnrollmentTokens lists the enrollment tokens of ws that can still
// enroll (unused, unexpired), soonest to expire first, never their secrets.
func (s *Server) ListEnrollmentTokens(ctx context.Context, ws string) ([]client.EnrollmentTokenInfo, error) {
	now := time.Now()
	out := []client.EnrollmentTokenInfo{}
	err := kvjson.List(ctx, s.st.tokens, ">", func(kvKey string, _ uint64, t *tokenRecord) {
		if t.Workspace == ws && !t.Used && now.Before(t.ExpiresAt) {
			out = append(out, client.EnrollmentTokenInfo{
				ID: recordID(tokenIDPrefix, t.ID, kvKey), Agent: t.Agent, Pool: t.Pool, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt,
			})
		}
	})
	slices.SortFunc(out, func(a, b client.EnrollmentTokenInfo) int {
		return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), strings.Compare(a.ID, b.ID))
	})
	return out, err
}

// DeleteEnrollmentToken deletes the enrollment token id of ws: it no
// longer enrolls.
func (s *Server) DeleteEnrollmentToken(ctx context.Context, ws, id string) error {
	kvKey, err := s.findRecord(ctx, ws, id, true)
	if err != nil {
		return err
	}
	if err := s.st.tokens.Delete(ctx, kvKey); err != nil {
		return err
	}
	s.log.Info("enrollment token deleted", "ws", ws, "token", id)
	return nil
}

// findRecord is the KV key of the key (or, with token, the enrollment
// token) id of workspace ws; not_found when there is none.
func (s *Server) findRecord(ctx context.Context, ws, id string, token bool) (string, error) {
	var found string
	var err error
	if token {
		err = kvjson.List(ctx, s.st.tokens, ">", func(kvKey string, _ uint64, t *tokenRecord) {
			if t.Workspace == ws && recordID(tokenIDPrefix, t.ID, kvKey) == id {
				found = kvKey
			}
		})
	} else {
		err = kvjson.List(ctx, s.st.apiKeys, ">", func(kvKey string, _ uint64, k *keyRecord) {
			if k.Workspace == ws && recordID(keyIDPrefix, k.ID, kvKey) == id {
				found = kvKey
			}
		})
	}
	if err != nil {
		return "", err
	}
	if found == "" {
		what := "key"
		if token {
			what = "enrollment token"
		}
		return "", wire.Errorf(wire.CodeNotFound, "", "workspace %q has no %s %q", ws, what, id)
	}
	return found, nil
}

func (s *Server) handleListKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := s.ListKeys(r.Context(), r.PathValue("ws"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.KeyList{Keys: keys})
	return nil
}

func (s *Server) handleDeleteKey(w http.ResponseWriter, r *http.Request) error {
	id, err := pathRecordID(r)
	if err != nil {
		return err
	}
	if err := s.DeleteKey(r.Context(), r.PathValue("ws"), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) handleListEnrollmentTokens(w http.ResponseWriter, r *http.Request) error {
	toks, err := s.ListEnrollmentTokens(r.Context(), r.PathValue("ws"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.EnrollmentTokenList{Tokens: toks})
	return nil
}

func (s *Server) handleDeleteEnrollmentToken(w http.ResponseWriter, r *http.Request) error {
	id, err := pathRecordID(r)
	if err != nil {
		return err
	}
	if err := s.DeleteEnrollmentToken(r.Context(), r.PathValue("ws"), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// keyUseEvery is how stale a key's stored lastUsed may get: a call with a
// workspace key writes it back at most this often.
const keyUseEvery = time.Minute

// keyUses writes the lastUsed of workspace keys back to their records, off
// the calls that use them, one write per key at a time.
type keyUses struct {
	mu       sync.Mutex
	inflight map[string]bool
	closed   bool
	wg       sync.WaitGroup
}

// noteKeyUse records a use of the key stored under kvKey (read at rev)
// when its stored lastUsed is older than keyUseEvery. It never blocks.
func (s *Server) noteKeyUse(kvKey string, rec keyRecord, rev uint64) {
	now := time.Now().UTC()
	if now.Sub(rec.LastUsed) < keyUseEvery || !s.keyUses.start(kvKey) {
		return
	}
	go func() {
		defer s.keyUses.done(kvKey)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rec.LastUsed = now
		// A conflict means someone else wrote it (a use, a delete): fine.
		if _, err := kvjson.Update(ctx, s.st.apiKeys, kvKey, &rec, rev); err != nil && !isRevisionMismatch(err) {
			s.log.Warn("store key lastUsed", "err", err)
		}
	}()
}

// start claims the write of kvKey; false if one is in flight or the server
// is closing.
func (u *keyUses) start(kvKey string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed || u.inflight[kvKey] {
		return false
	}
	if u.inflight == nil {
		u.inflight = map[string]bool{}
	}
	u.inflight[kvKey] = true
	u.wg.Add(1)
	return true
}

func (u *keyUses) done(kvKey string) {
	u.mu.Lock()
	delete(u.inflight, kvKey)
	u.mu.Unlock()
	u.wg.Done()
}

// close refuses new writes and waits for those in flight.
func (u *keyUses) close() {
	u.mu.Lock()
	u.closed = true
	u.mu.Unlock()
	u.wg.Wait()
}
