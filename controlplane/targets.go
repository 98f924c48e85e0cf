package controlplane

import (
	"context"
	"net/http"

	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
)

// Response headers of operations routed through a session.
const (
	HeaderBackend = "Outpost-Backend"
	HeaderEpoch   = "Outpost-Epoch"
)

// target is where a target operation runs: one agent today, a session's
// active backend next.
type target interface {
	// Name is the backend's name (the agent id, or the session's backend).
	Name() string
	// Epoch is the session epoch the call carries (0 outside sessions).
	Epoch() uint64
	// LastAgent is the id of the agent the last call went to (before any,
	// the one the target points at).
	LastAgent() string
	// Call runs op with body on the target and decodes the result into out.
	Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error
	// Concurrent is the target for calls made several at once (a
	// transfer's chunks): the same calls, with the same options, but no
	// updates to the response's headers, which net/http may be writing
	// meanwhile. Every decorator of a target says what it keeps.
	Concurrent() target
}

// targetHandler serves one target operation.
type targetHandler func(w http.ResponseWriter, r *http.Request, t target) error

// targetPrefix is one way of naming a target in a path.
type targetPrefix struct {
	pattern string // e.g. "/v1/workspaces/{ws}/agents/{agent}"
	// headers adds Outpost-Backend and Outpost-Epoch to responses.
	headers bool
	resolve func(r *http.Request) (target, error)
}

func (s *Server) targetPrefixes() []targetPrefix {
	return []targetPrefix{
		{pattern: "/v1/workspaces/{ws}/agents/{agent}", resolve: s.resolveAgent},
		{pattern: "/v1/workspaces/{ws}/sessions/{session}", headers: true, resolve: s.resolveSession},
	}
}

// handleTarget mounts h for method and suffix (e.g. "POST", "/exec") under
// every target prefix: the operation is written once and served everywhere.
func (s *Server) handleTarget(mux *http.ServeMux, method, suffix string, h targetHandler) {
	for _, p := range s.targetPrefixes() {
		pattern := p.pattern + suffix
		if method != "" {
			pattern = method + " " + pattern
		}
		s.handle(mux, pattern, inWorkspace, func(w http.ResponseWriter, r *http.Request) error {
			t, err := p.resolve(r)
			if err != nil {
				return err
			}
			if t, err = withRequestOptions(r, t); err != nil {
				return err
			}
			if p.headers {
				t = routedHeaders(w.Header(), t)
			}
			return h(w, r, t)
		})
	}
}

// agentTarget is one enrolled agent, reached straight through rpc.
type agentTarget struct {
	rpc *rpc.Client
	ag  subjects.Agent
}

func (t agentTarget) Name() string  { return t.ag.ID }
func (t agentTarget) Epoch() uint64 { return 0 }

func (t agentTarget) LastAgent() string { return t.ag.ID }

// Concurrent is t: its calls touch no response.
func (t agentTarget) Concurrent() target { return t }
func (t agentTarget) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	return t.rpc.Call(ctx, t.ag, op, body, out, opts)
}

// resolveAgent is the target of /v1/workspaces/{ws}/agents/{agent}: 404
// unless the agent is enrolled and not revoked. Whether it is online is for
// the call to find out (503, never 404).
func (s *Server) resolveAgent(r *http.Request) (target, error) {
	ag := pathAgent(r)
	if err := s.agentEnrolled(r.Context(), ag); err != nil {
		return nil, err
	}
	if err := tooOld(ag, s.presence.Get(ag).Hello); err != nil {
		return nil, err
	}
	return agentTarget{rpc: s.rpc, ag: ag}, nil
}
