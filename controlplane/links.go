package controlplane

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/routing"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Preview links: a URL a browser opens without a bearer, reaching one
// port of one target until it expires or is deleted.
//
// A link is a record in KV (bucketLinks, by id) and a token in its URL:
// the id (128 random bits) and an HMAC-SHA256 of the record's scope
// (workspace, target, port, expiry) under a key derived from the admin
// token. A token is checked against the record (deleted: refused) and the
// signature (a tampered token or record: refused) before anything is
// proxied; a token that is not exactly that is 403 link_invalid.
//
// Origin: without a preview domain, links are served under previewPath on
// the API's own host, and every response carries a CSP sandbox
// (previewSandbox) that gives the previewed page an opaque origin: it
// cannot read what the console keeps in sessionStorage (the API token),
// nor register a service worker. With Config.PreviewDomain each link is
// https://<token>.<domain>/, an origin of its own, with no sandbox.

// previewPath is where links are served on the API's host.
const previewPath = "/preview/"

// bucketLinks holds the preview links: <id> → linkRecord. Entries go a day
// after the longest a link may live.
const bucketLinks = "outpost_preview_links"

// Link lifetimes.
const (
	defaultLinkTTL = time.Hour
	maxLinkTTL     = 7 * 24 * time.Hour
)

// linkRecord is one preview link.
type linkRecord struct {
	ID        string `json:"id"`
	Workspace string `json:"workspace"`
	Kind      string `json:"kind"` // "agent" or "session"
	Target    string `json:"target"`
	Port      int    `json:"port"`
	// UID is the session's incarnation (routing.State.UID) for a link to
	// a session: the link dies with the session, and a session created
	// again under the same id does not revive it.
	UID       string    `json:"uid,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// tokenLen is the length of a link's token: a 26-character id and a
// 26-character signature, one DNS label.
const tokenLen = 52

// linkKey is the HMAC key of the links' signatures.
func (s *Server) linkKey() []byte {
	k := sha256.Sum256([]byte("outpost preview links\x00" + s.adminToken))
	return k[:]
}

// sign is the signature of rec's scope, as it appears in a token.
func (s *Server) sign(rec *linkRecord) string {
	m := hmac.New(sha256.New, s.linkKey())
	for _, f := range []string{rec.ID, rec.Workspace, rec.Kind, rec.Target, strconv.Itoa(rec.Port), strconv.FormatInt(rec.ExpiresAt.UnixMilli(), 10)} {
		m.Write([]byte(f))
		m.Write([]byte{0})
	}
	return lowerBase32.EncodeToString(m.Sum(nil)[:16])
}

// linkURL is the URL of rec for a request that arrived as r.
func (s *Server) linkURL(r *http.Request, rec *linkRecord) string {
	token := rec.ID + s.sign(rec)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if d := s.cfg.PreviewDomain; d != "" {
		return scheme + "://" + token + "." + d
	}
	base := s.cfg.PublicURL
	if base == "" {
		base = scheme + "://" + r.Host
	}
	return strings.TrimRight(base, "/") + previewPath + token
}

// targetScope is the kind and id of the target in r's path.
func targetScope(r *http.Request) (kind, id string) {
	if a := r.PathValue("agent"); a != "" {
		return "agent", a
	}
	return "session", r.PathValue("session")
}

func (s *Server) handleCreateLink(w http.ResponseWriter, r *http.Request, t target) error {
	port, err := pathPort(r)
	if err != nil {
		return err
	}
	var body struct {
		TTLSeconds *int64 `json:"ttlSeconds"`
	}
	if err := decodeJSON(w, r, 4<<10, &body); err != nil {
		return err
	}
	ttl := defaultLinkTTL
	if body.TTLSeconds != nil {
		ttl = time.Duration(*body.TTLSeconds) * time.Second
		if *body.TTLSeconds < 1 || ttl > maxLinkTTL {
			return wire.Errorf(wire.CodeInvalidArgument, "", "ttlSeconds must be 1 to %d", int64(maxLinkTTL/time.Second))
		}
	}
	kind, id := targetScope(r)
	now := time.Now().UTC().Truncate(time.Millisecond)
	rec := &linkRecord{ID: strings.ToLower(rand.Text()), Workspace: r.PathValue("ws"), Kind: kind, Target: id,
		Port: port, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	if kind == "session" {
		st, err := s.sessions.Session(rec.Workspace, id).State(r.Context())
		if err != nil {
			return err
		}
		rec.UID = st.UID
	}
	if _, err := kvjson.Create(r.Context(), s.st.links, rec.ID, rec); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, client.Link{ID: rec.ID, URL: s.linkURL(r, rec), Port: port, CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt})
	return nil
}

// linksOf lists the live links of r's target and port.
func (s *Server) linksOf(ctx context.Context, r *http.Request, port int) ([]*linkRecord, error) {
	kind, id := targetScope(r)
	ws := r.PathValue("ws")
	var out []*linkRecord
	now := time.Now()
	err := kvjson.List(ctx, s.st.links, ">", func(_ string, _ uint64, rec *linkRecord) {
		if rec.Workspace == ws && rec.Kind == kind && rec.Target == id && rec.Port == port && now.Before(rec.ExpiresAt) {
			out = append(out, rec)
		}
	})
	return out, err
}

func (s *Server) handleListLinks(w http.ResponseWriter, r *http.Request, _ target) error {
	port, err := pathPort(r)
	if err != nil {
		return err
	}
	recs, err := s.linksOf(r.Context(), r, port)
	if err != nil {
		return err
	}
	out := struct {
		Links []client.Link `json:"links"`
	}{Links: []client.Link{}}
	for _, rec := range recs {
		out.Links = append(out.Links, client.Link{ID: rec.ID, URL: s.linkURL(r, rec), Port: rec.Port, CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) handleDeleteLink(w http.ResponseWriter, r *http.Request, _ target) error {
	port, err := pathPort(r)
	if err != nil {
		return err
	}
	recs, err := s.linksOf(r.Context(), r, port)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if rec.ID == r.PathValue("id") {
			if err := s.st.links.Delete(r.Context(), rec.ID); err != nil {
				return err
			}
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
	}
	return wire.Errorf(wire.CodeNotFound, "", "no link %q on port %d of this target", r.PathValue("id"), port)
}

// deleteSessionLinks deletes the preview links of session id of ws: they
// end with it (a link of a deleted session is 403 link_invalid even when
// this fails, by its UID).
func (s *Server) deleteSessionLinks(ctx context.Context, ws, id string) error {
	var ids []string
	err := kvjson.List(ctx, s.st.links, ">", func(_ string, _ uint64, rec *linkRecord) {
		if rec.Workspace == ws && rec.Kind == "session" && rec.Target == id {
			ids = append(ids, rec.ID)
		}
	})
	if err != nil {
		return err
	}
	for _, lid := range ids {
		if err := s.st.links.Delete(ctx, lid); err != nil {
			return fmt.Errorf("delete preview link %s: %w", lid, err)
		}
	}
	return nil
}

// checkLink returns the record of token: 403 link_invalid for a token that
// is malformed, unknown (deleted) or whose signature does not match, 403
// link_expired after its expiry.
func (s *Server) checkLink(ctx context.Context, token string) (*linkRecord, error) {
	invalid := wire.Errorf(wire.CodePermissionDenied, wire.ReasonLinkInvalid, "this preview link is not valid (revoked, or not a link)")
	if len(token) != tokenLen {
		return nil, invalid
	}
	id, sig := token[:26], token[26:]
	if strings.Trim(id, "abcdefghijklmnopqrstuvwxyz234567") != "" {
		return nil, invalid
	}
	var rec linkRecord
	if _, err := kvjson.Get(ctx, s.st.links, id, &rec); err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, wire.ErrNotFound) {
			return nil, invalid
		}
		return nil, err
	}
	if !hmac.Equal([]byte(sig), []byte(s.sign(&rec))) {
		return nil, invalid
	}
	if !time.Now().Before(rec.ExpiresAt) {
		return nil, wire.Errorf(wire.CodePermissionDenied, wire.ReasonLinkExpired, "this preview link expired at %s", rec.ExpiresAt.Format(time.RFC3339))
	}
	return &rec, nil
}

// linkTarget is the target a link reaches: its agent (404 once revoked)
// or its session's active backend.
func (s *Server) linkTarget(ctx context.Context, rec *linkRecord) (target, error) {
	if rec.Kind == "agent" {
		ag := subjects.Agent{Workspace: rec.Workspace, ID: rec.Target}
		if err := s.agentEnrolled(ctx, ag); err != nil {
			return nil, err
		}
		return agentTarget{rpc: s.rpc, ag: ag}, nil
	}
	sess := s.sessions.Session(rec.Workspace, rec.Target)
	st, err := sess.State(ctx)
	switch {
	case errors.Is(err, wire.ErrNotFound) || err == nil && rec.UID != "" && st.UID != rec.UID:
		// The session was deleted (and maybe made again): its links
		// went with it. The record is gone too unless the delete failed
		// to remove it.
		_ = s.st.links.Delete(ctx, rec.ID)
		return nil, wire.Errorf(wire.CodePermissionDenied, wire.ReasonLinkInvalid, "this preview link is not valid (its session was deleted)")
	case err != nil:
		return nil, err
	}
	ag, _ := st.Agent(st.Active)
	return &sessionTarget{sess: sess, route: routing.Route{Backend: st.Active, Agent: ag.ID, Epoch: st.Epoch}}, nil
}

// handlePreviewPath serves a link on the API's host: previewPath<token>/...
func (s *Server) handlePreviewPath(w http.ResponseWriter, r *http.Request) error {
	token := r.PathValue("token")
	return s.servePreview(w, r, token, previewPath+token+"/", true)
}

// servePreview proxies r through the link of token; prefix is the part of
// the path before the service's own.
func (s *Server) servePreview(w http.ResponseWriter, r *http.Request, token, prefix string, sandbox bool) error {
	rec, err := s.checkLink(r.Context(), token)
	if err != nil {
		return err
	}
	// The link is the caller's credential: its body (an upload to the
	// app, a WebSocket) takes the time it takes, as a known caller's does.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	t, err := s.linkTarget(r.Context(), rec)
	if err != nil {
		return err
	}
	s.proxyPort(w, r, rec.Workspace, t, rec.Port, prefix, sandbox)
	return nil
}

// previewHost serves requests whose Host is <token>.<PreviewDomain>;
// everything else goes to next.
func (s *Server) previewHost(next http.Handler) http.Handler {
	d := s.cfg.PreviewDomain
	if d == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutSuffix(strings.ToLower(r.Host), "."+strings.ToLower(d))
		if !ok || strings.Contains(token, ".") {
			next.ServeHTTP(w, r)
			return
		}
		if err := s.servePreview(w, r, token, "/", false); err != nil {
			writeError(s.log, w, r, err)
		}
	})
}
