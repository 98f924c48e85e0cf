package controlplane

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/routing"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// maxIdempotencyKey bounds the Idempotency-Key header.
const maxIdempotencyKey = 128

// sessionTarget is a session's active backend: every call goes through
// routing, which reads the pointer, carries the epoch and retries or
// refuses when the pointer moved. Name and Epoch say where the last call
// ran (before any, where the session pointed when it was resolved).
type sessionTarget struct {
	sess *routing.Session

	mu    sync.Mutex
	route routing.Route
}

func (t *sessionTarget) Name() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.route.Backend
}

func (t *sessionTarget) Epoch() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.route.Epoch
}

func (t *sessionTarget) LastAgent() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.route.Agent
}

// Concurrent is t: its route is kept under its lock.
func (t *sessionTarget) Concurrent() target { return t }

func (t *sessionTarget) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	route, err := t.sess.Call(ctx, op, body, out, opts)
	if route.Backend != "" {
		t.mu.Lock()
		t.route = route
		t.mu.Unlock()
	}
	return err
}

// resolveSession is the target of /v1/workspaces/{ws}/sessions/{session}:
// 404 unless the session exists.
func (s *Server) resolveSession(r *http.Request) (target, error) {
	sess := s.pathSession(r)
	st, err := sess.State(r.Context())
	if err != nil {
		return nil, err
	}
	ag, _ := st.Agent(st.Active)
	if ag.ID != "" {
		// Streams (attach, ports) go to this agent without routing's
		// calls, which check each agent they reach (servedOnly).
		if err := tooOld(ag, s.presence.Get(ag).Hello); err != nil {
			return nil, err
		}
	}
	return &sessionTarget{sess: sess, route: routing.Route{Backend: st.Active, Agent: ag.ID, Epoch: st.Epoch}}, nil
}

// routedTarget keeps the Outpost-Backend and Outpost-Epoch response
// headers in step with where the target's calls ran, errors included.
type routedTarget struct {
	target
	h http.Header
}

func routedHeaders(h http.Header, t target) target {
	rt := routedTarget{target: t, h: h}
	rt.setHeaders()
	return rt
}

func (t routedTarget) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	err := t.target.Call(ctx, op, body, out, opts)
	t.setHeaders()
	return err
}

// Concurrent is the target without the header updates.
func (t routedTarget) Concurrent() target { return t.target.Concurrent() }

func (t routedTarget) setHeaders() {
	t.h.Set(HeaderBackend, t.Name())
	t.h.Set(HeaderEpoch, strconv.FormatUint(t.Epoch(), 10))
}

// keyedTarget gives its calls the request's Idempotency-Key.
type keyedTarget struct {
	target
	key string
}

// Concurrent keeps the key.
func (t keyedTarget) Concurrent() target {
	return keyedTarget{target: t.target.Concurrent(), key: t.key}
}

func (t keyedTarget) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	if opts.IdempotencyKey == "" {
		opts.IdempotencyKey = t.key
	}
	return t.target.Call(ctx, op, body, out, opts)
}

// withRequestOptions applies what the request's headers ask of its calls:
// an Idempotency-Key (1 to 128 printable ASCII characters) names the
// operation's mutation, so that the agent runs it once.
func withRequestOptions(r *http.Request, t target) (target, error) {
	key := r.Header.Get(client.HeaderIdempotencyKey)
	if key == "" {
		return t, nil
	}
	if len(key) > maxIdempotencyKey {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "%s must be at most %d characters", client.HeaderIdempotencyKey, maxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "", "%s must be printable ASCII without spaces", client.HeaderIdempotencyKey)
		}
	}
	return keyedTarget{target: t, key: key}, nil
}
