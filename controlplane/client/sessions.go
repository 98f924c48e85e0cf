package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Headers of target operations.
const (
	// HeaderIdempotencyKey names a mutation: an agent runs a mutation with a
	// given key once, and answers a repeat with the first run's result.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderBackend and HeaderEpoch say where a session routed a call.
	HeaderBackend = "Outpost-Backend"
	HeaderEpoch   = "Outpost-Epoch"
)

// Backend kinds of a session.
const (
	KindAgent = "agent"
	KindPool  = "pool"
)

// SessionBackend is one backend of a session: Kind "agent" with Agent (one
// enrolled agent, never replaced), or Kind "pool" with Pool (any agent of
// the pool, claimed by the session). In responses, Claimed is the agent a
// pool backend holds, and Status the presence of the backend's agent
// (online, reconnecting, offline; empty for a pool backend holding none).
type SessionBackend struct {
	Kind    string `json:"kind"`
	Agent   string `json:"agent,omitempty"`
	Pool    string `json:"pool,omitempty"`
	Claimed string `json:"claimed,omitempty"`
	Status  string `json:"status,omitempty"`
}

// Transition is one move of a session's pointer; Agent is the agent behind
// To from that epoch on. A pool backend that replaced its gone agent moves
// from itself to itself.
type Transition = wire.Transition

// Session is a session as the API returns it. Epoch starts at 1 and grows
// by one with every move of the pointer; Transitions keeps the latest 100.
type Session struct {
	ID          string                    `json:"id"`
	Active      string                    `json:"active"`
	Epoch       uint64                    `json:"epoch"`
	Backends    map[string]SessionBackend `json:"backends"`
	Transitions []Transition              `json:"transitions"`
	CreatedAt   time.Time                 `json:"createdAt"`
	// SnapshotEveryMs is the interval of the session's background
	// snapshots, when set.
	SnapshotEveryMs int64 `json:"snapshotEveryMs,omitempty"`
	// LastCarry is what the last swap with carry moved.
	LastCarry *LastCarry `json:"lastCarry,omitempty"`
}

// LastCarry says what a swap with carry restored onto the new backend:
// the snapshot, the backend it was taken on, when, and the files and bytes
// it moved (wire.LastCarry: one type for routing and the API).
type LastCarry = wire.LastCarry

// CreateSessionRequest is the body of POST /v1/workspaces/{ws}/sessions.
// An empty ID makes one.
type CreateSessionRequest struct {
	ID       string                    `json:"id,omitempty"`
	Backends map[string]SessionBackend `json:"backends"`
	Active   string                    `json:"active"`
	// SnapshotEveryMs, when set (at least 1000), has the control plane
	// snapshot the active backend's root that often, so that a swap with
	// carry away from a backend gone offline has something to restore.
	SnapshotEveryMs int64 `json:"snapshotEveryMs,omitempty"`
}

// SwapRequest is the body of POST /v1/workspaces/{ws}/sessions/{s}/swap.
// With IfEpoch the swap happens only if the session is at that epoch.
// With Carry the workspace moves too: the old backend's root is
// snapshotted (or, offline, the session's latest snapshot is used) and
// restored onto the new one before the pointer moves.
type SwapRequest struct {
	To      string  `json:"to"`
	IfEpoch *uint64 `json:"ifEpoch,omitempty"`
	Carry   bool    `json:"carry,omitempty"`
}

// SessionList is the body of GET /v1/workspaces/{ws}/sessions.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

func (c *Client) sessionsPath(ws string) string { return c.wsPath(ws) + "/sessions" }

func (c *Client) sessionPath(ws, id string) string {
	return c.sessionsPath(ws) + "/" + url.PathEscape(id)
}

// CreateSession calls POST /v1/workspaces/{ws}/sessions.
func (c *Client) CreateSession(ctx context.Context, ws string, req CreateSessionRequest) (*Session, error) {
	var out Session
	return &out, c.do(ctx, http.MethodPost, c.sessionsPath(ws), req, &out)
}

// GetSession calls GET /v1/workspaces/{ws}/sessions/{id}.
func (c *Client) GetSession(ctx context.Context, ws, id string) (*Session, error) {
	var out Session
	return &out, c.do(ctx, http.MethodGet, c.sessionPath(ws, id), nil, &out)
}

// ListSessions calls GET /v1/workspaces/{ws}/sessions.
func (c *Client) ListSessions(ctx context.Context, ws string) ([]Session, error) {
	var out SessionList
	if err := c.do(ctx, http.MethodGet, c.sessionsPath(ws), nil, &out); err != nil {
		return nil, err
	}
	return out.Sessions, nil
}

// SwapSession calls POST /v1/workspaces/{ws}/sessions/{id}/swap, pointing
// the session at backend to. ifEpoch 0 swaps whatever the epoch; otherwise
// a session no longer at ifEpoch is conflict/epoch_mismatch. A target that
// cannot serve now is 503 and the pointer does not move.
func (c *Client) SwapSession(ctx context.Context, ws, id, to string, ifEpoch uint64) (*Session, error) {
	req := SwapRequest{To: to}
	if ifEpoch != 0 {
		req.IfEpoch = &ifEpoch
	}
	var out Session
	return &out, c.do(ctx, http.MethodPost, c.sessionPath(ws, id)+"/swap", req, &out)
}

// Swap calls POST /v1/workspaces/{ws}/sessions/{id}/swap with req: with
// req.Carry the workspace's files move with the pointer; a session with
// nothing to carry (old backend offline, no snapshot) is
// conflict/no_snapshot and the pointer stays.
func (c *Client) Swap(ctx context.Context, ws, id string, req SwapRequest) (*Session, error) {
	var out Session
	return &out, c.do(ctx, http.MethodPost, c.sessionPath(ws, id)+"/swap", req, &out)
}

// DeleteSession calls DELETE /v1/workspaces/{ws}/sessions/{id}; the
// session's pool claims are released.
func (c *Client) DeleteSession(ctx context.Context, ws, id string) error {
	return c.do(ctx, http.MethodDelete, c.sessionPath(ws, id), nil, nil)
}

// Session is the target of session id of workspace ws ("" for the
// client's default): its operations run on the session's active backend.
// Use WithRoute to learn where each one ran.
func (c *Client) Session(ws, id string) *Target {
	return &Target{c: c, prefix: c.sessionPath(ws, id)}
}

// Route is where a session routed a call: the backend's name and the epoch
// the call carried (the Outpost-Backend and Outpost-Epoch headers).
type Route struct {
	Backend string
	Epoch   uint64
}

type idempotencyKey struct{}

type routeKey struct{}

// WithIdempotencyKey returns a context whose target calls carry key as the
// Idempotency-Key header: the agent runs a mutation with a given key once.
// Through a session, a mutation that raced a swap is never replayed
// (conflict/outcome_unknown); sending it again with the same key is safe
// only on the backend that ran it.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, key)
}

// WithRoute returns a context whose calls record in r where a session
// routed them. Use it for one call at a time.
func WithRoute(ctx context.Context, r *Route) context.Context {
	return context.WithValue(ctx, routeKey{}, r)
}

// setContextHeaders adds the headers ctx asks for to req.
func setContextHeaders(ctx context.Context, req *http.Request) {
	if k, _ := ctx.Value(idempotencyKey{}).(string); k != "" {
		req.Header.Set(HeaderIdempotencyKey, k)
	}
}

// recordRoute fills the Route of ctx, if any, from resp's headers.
func recordRoute(ctx context.Context, resp *http.Response) {
	r, _ := ctx.Value(routeKey{}).(*Route)
	if r == nil {
		return
	}
	r.Backend = resp.Header.Get(HeaderBackend)
	r.Epoch, _ = strconv.ParseUint(resp.Header.Get(HeaderEpoch), 10, 64)
}
