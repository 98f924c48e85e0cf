package controlplane

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// access is who may call a route.
type access int

const (
	public      access = iota // no bearer token (healthz, enroll)
	adminOnly                 // the admin token
	inWorkspace               // the admin token or a key of the path's {ws}
)

// caller is an authenticated API caller: the admin, or a workspace key.
type caller struct {
	admin     bool
	workspace string
}

type callerKey struct{}

func callerFrom(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// pathIDs are the path wildcards that hold ids; each is validated.
var pathIDs = []string{"ws", "agent", "session"}

// handle mounts h at pattern behind the auth of acc: a missing or unknown
// token is 401, a bad id in the path 400, a workspace key outside its
// workspace (or on an admin call) 403, a workspace that does not exist 404.
func (s *Server) handle(mux *http.ServeMux, pattern string, acc access, h handlerFunc) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		// Until the caller is known its body must arrive in time; the
		// deadline also bounds what net/http reads of an unread body after
		// an error answer. decodeJSON lifts it once a body is in.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(unauthenticatedBodyTimeout))
		r, err := s.authorize(r, acc)
		switch {
		case err != nil && r.ContentLength != 0:
			// Answer at once and hang up rather than read the body of a
			// caller turned away.
			w.Header().Set("Connection", "close")
		case err == nil && acc != public:
			_ = rc.SetReadDeadline(time.Time{})
		}
		if err == nil {
			err = h(w, r)
		}
		if err != nil {
			writeError(s.log, w, r, err)
		}
	})
}

// authorize checks r against acc and returns it with its caller in the
// context.
func (s *Server) authorize(r *http.Request, acc access) (*http.Request, error) {
	if !s.ready.Load() {
		return r, wire.Errorf(wire.CodeUnavailable, wire.ReasonStarting, "the control plane is not started")
	}
	if acc == public {
		return r, validatePathIDs(r)
	}
	c, err := s.authenticate(r)
	if err != nil {
		return r, err
	}
	r = r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
	if err := validatePathIDs(r); err != nil {
		return r, err
	}
	switch {
	case acc == adminOnly && !c.admin:
		return r, wire.Errorf(wire.CodePermissionDenied, "", "this call needs the admin token")
	case acc == inWorkspace && !c.admin && c.workspace != r.PathValue("ws"):
		return r, wire.Errorf(wire.CodePermissionDenied, "", "this key is for workspace %q only", c.workspace)
	}
	if ws := r.PathValue("ws"); ws != "" {
		if err := s.workspaceExists(r.Context(), ws); err != nil {
			return r, err
		}
	}
	return r, nil
}

// authenticate reads the bearer token: the admin token (compared by hash in
// constant time) or a workspace key (looked up by hash).
func (s *Server) authenticate(r *http.Request) (caller, error) {
	if c, ok, err := s.ticketCaller(r); ok {
		return c, err
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	tok = strings.TrimSpace(tok)
	if h == "" {
		return caller{}, wire.Errorf(wire.CodeUnauthenticated, "", "missing Authorization: Bearer token")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return caller{}, wire.Errorf(wire.CodeUnauthenticated, "", "Authorization must be \"Bearer <token>\"")
	}
	hash := enroll.HashToken(tok)
	if enroll.ConstantTimeEqualHash(hash, s.adminHash) {
		return caller{admin: true}, nil
	}
	var k keyRecord
	kvKey := hashKey(hash)
	rev, err := kvjson.Get(r.Context(), s.st.apiKeys, kvKey, &k)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return caller{}, wire.Errorf(wire.CodeUnauthenticated, "", "unknown token")
		}
		return caller{}, err
	}
	s.noteKeyUse(kvKey, k, rev)
	return caller{workspace: k.Workspace}, nil
}

func validatePathIDs(r *http.Request) error {
	for _, name := range pathIDs {
		v := r.PathValue(name)
		if v == "" {
			continue
		}
		if err := subjects.ValidateID(v); err != nil {
			return wire.Errorf(wire.CodeInvalidArgument, wire.ReasonInvalidID, "%s: %v", name, err)
		}
	}
	return nil
}
