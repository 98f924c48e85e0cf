package controlplane

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// mockAgent enrolls id (in pool, "" for none) and serves it with the mock
// responder on the agent's own credentials; exec answers the agent's id.
func mockAgent(t *testing.T, s *Server, ws, id, pool string) *agenttest.Agent {
	t.Helper()
	tok, err := adminClient(s).CreateEnrollmentToken(context.Background(), ws, client.EnrollmentTokenRequest{Agent: id, Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	ta := redeem(t, s, tok.Token, "")
	m, _ := serveMock(t, ta)
	m.Handle(wire.OpExec, func(*wire.Request) (any, error) { return &wire.ExecResult{Stdout: []byte(id)}, nil })
	waitFor(t, waitLong, id+" online", func() bool { return s.presence.Get(ta.ag).Status == "online" })
	return m
}

// sessionEnv is a control plane with agent a1 and pool agent p1 in w1, and
// session s1 with backends laptop (a1) and cloud (pool cloud).
type sessionEnv struct {
	s      *Server
	cl     *client.Client
	a1, p1 *agenttest.Agent
	target *client.Target
}

func newSessionEnv(t *testing.T) *sessionEnv {
	t.Helper()
	s := startServer(t, testConfig(t))
	cl := adminClient(s)
	if _, err := cl.CreateWorkspace(context.Background(), "w1"); err != nil {
		t.Fatal(err)
	}
	e := &sessionEnv{s: s, cl: cl, a1: mockAgent(t, s, "w1", "a1", ""), p1: mockAgent(t, s, "w1", "p1", "cloud")}
	sess, err := cl.CreateSession(context.Background(), "w1", client.CreateSessionRequest{
		ID:     "s1",
		Active: "laptop",
		Backends: map[string]client.SessionBackend{
			"laptop": {Kind: client.KindAgent, Agent: "a1"},
			"cloud":  {Kind: client.KindPool, Pool: "cloud"},
		},
	})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	if sess.ID != "s1" || sess.Active != "laptop" || sess.Epoch != 1 || sess.Backends["laptop"].Status != "online" {
		t.Fatalf("created %+v", sess)
	}
	e.target = cl.Session("w1", "s1")
	return e
}

// execOn runs exec through the session and returns the agent that ran it
// and where the session said it routed it.
func (e *sessionEnv) execOn(t *testing.T, key string) (string, client.Route, error) {
	t.Helper()
	var route client.Route
	ctx := client.WithRoute(context.Background(), &route)
	if key != "" {
		ctx = client.WithIdempotencyKey(ctx, key)
	}
	res, err := e.target.Exec(ctx, client.ExecRequest{Argv: []string{"true"}})
	if err != nil {
		return "", route, err
	}
	return res.Stdout, route, nil
}

func TestSessionSwapOverHTTP(t *testing.T) {
	e := newSessionEnv(t)
	ctx := context.Background()
	ran, route, err := e.execOn(t, "k-1")
	if err != nil || ran != "a1" || route != (client.Route{Backend: "laptop", Epoch: 1}) {
		t.Fatalf("exec: ran on %q routed %+v err %v; want a1 via laptop at epoch 1", ran, route, err)
	}
	reqs := e.a1.Requests()
	if last := reqs[len(reqs)-1]; last.IdempotencyKey != "k-1" || last.Epoch != 1 || last.Session == "" {
		t.Fatalf("agent saw key %q epoch %d session %q; want k-1 at epoch 1 in a session", last.IdempotencyKey, last.Epoch, last.Session)
	}

	sess, err := e.cl.SwapSession(ctx, "w1", "s1", "cloud", 1)
	if err != nil {
		t.Fatalf("swap: %v", err)
	}
	if sess.Active != "cloud" || sess.Epoch != 2 || sess.Backends["cloud"].Claimed != "p1" || len(sess.Transitions) != 1 {
		t.Fatalf("after swap: %+v", sess)
	}
	if tr := sess.Transitions[0]; tr.From != "laptop" || tr.To != "cloud" || tr.Epoch != 2 || tr.Agent != "p1" {
		t.Fatalf("transition %+v", tr)
	}
	ran, route, err = e.execOn(t, "")
	if err != nil || ran != "p1" || route != (client.Route{Backend: "cloud", Epoch: 2}) {
		t.Fatalf("exec after swap: ran on %q routed %+v err %v; want p1 via cloud at epoch 2", ran, route, err)
	}
	caps, err := e.target.Capabilities(ctx)
	if err != nil || caps.Agent != "p1" {
		t.Fatalf("capabilities: %+v, %v; want p1's", caps, err)
	}
	got, err := e.cl.GetSession(ctx, "w1", "s1")
	if err != nil || got.Epoch != 2 || got.Active != "cloud" {
		t.Fatalf("get: %+v, %v", got, err)
	}
	list, err := e.cl.ListSessions(ctx, "w1")
	if err != nil || len(list) != 1 || list[0].ID != "s1" {
		t.Fatalf("list: %+v, %v", list, err)
	}
}

func TestSessionSwapRefusals(t *testing.T) {
	e := newSessionEnv(t)
	ctx := context.Background()
	tests := []struct {
		name   string
		body   any
		status int
		reason string
	}{
		{"stale ifEpoch", map[string]any{"to": "cloud", "ifEpoch": 5}, http.StatusConflict, wire.ReasonEpochMismatch},
		{"ifEpoch zero", map[string]any{"to": "cloud", "ifEpoch": 0}, http.StatusBadRequest, ""},
		{"no target", map[string]any{}, http.StatusBadRequest, ""},
		{"unknown backend", map[string]any{"to": "moon"}, http.StatusBadRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := call(t, e.s, "POST", "/v1/workspaces/w1/sessions/s1/swap", e.s.AdminToken(), tt.body)
			if status != tt.status {
				t.Fatalf("status %d (%s), want %d", status, body, tt.status)
			}
			if _, reason := errorCode(t, body); reason != tt.reason {
				t.Fatalf("reason %q, want %q", reason, tt.reason)
			}
		})
	}

	// The pool agent leaves: swapping to it is 503 and the pointer stays.
	e.p1.StopHeartbeats()
	e.p1.PublishGoodbye()
	if err := e.p1.SetOnline(false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitLong, "p1 offline", func() bool {
		a, err := e.cl.GetAgent(ctx, "w1", "p1")
		return err == nil && a.Status == "offline"
	})
	_, err := e.cl.SwapSession(ctx, "w1", "s1", "cloud", 0)
	if !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("swap to a pool with no online agent: %v, want 503", err)
	}
	if got, _ := e.cl.GetSession(ctx, "w1", "s1"); got.Active != "laptop" || got.Epoch != 1 {
		t.Fatalf("a refused swap moved the pointer: %+v", got)
	}
}

func TestSessionOfflineBackendIs503WithHeaders(t *testing.T) {
	e := newSessionEnv(t)
	e.a1.StopHeartbeats()
	e.a1.PublishGoodbye()
	if err := e.a1.SetOnline(false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitLong, "a1 offline", func() bool { return e.s.presence.Get(e.a1.ID()).Status == "offline" })
	_, route, err := e.execOn(t, "")
	if !errors.Is(err, &wire.Error{Code: wire.CodeUnavailable, Reason: wire.ReasonAgentOffline}) {
		t.Fatalf("exec on an offline laptop: %v, want 503 agent_offline", err)
	}
	if route != (client.Route{Backend: "laptop", Epoch: 1}) {
		t.Fatalf("503 routed %+v, want the headers of laptop at epoch 1", route)
	}
	if n := e.p1.Count(""); n != 0 {
		t.Fatalf("the pool agent saw %d requests; an offline laptop must never fall back to it", n)
	}
	if got, _ := e.cl.GetSession(context.Background(), "w1", "s1"); got.Backends["cloud"].Claimed != "" {
		t.Fatalf("an offline laptop made the session claim %q", got.Backends["cloud"].Claimed)
	}
}

func TestSessionNotFoundAndDelete(t *testing.T) {
	e := newSessionEnv(t)
	ctx := context.Background()
	tests := []struct {
		name, method, path string
		body               any
		status             int
	}{
		{"get unknown", "GET", "/v1/workspaces/w1/sessions/nope", nil, http.StatusNotFound},
		{"exec unknown", "POST", "/v1/workspaces/w1/sessions/nope/exec", `{"argv":["true"]}`, http.StatusNotFound},
		{"capabilities unknown", "GET", "/v1/workspaces/w1/sessions/nope/capabilities", nil, http.StatusNotFound},
		{"swap unknown", "POST", "/v1/workspaces/w1/sessions/nope/swap", `{"to":"cloud"}`, http.StatusNotFound},
		{"bad id", "GET", "/v1/workspaces/w1/sessions/Bad.Id", nil, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, b := call(t, e.s, tt.method, tt.path, e.s.AdminToken(), tt.body); status != tt.status {
				t.Fatalf("%s %s: %d %s, want %d", tt.method, tt.path, status, b, tt.status)
			}
		})
	}
	if _, err := e.cl.SwapSession(ctx, "w1", "s1", "cloud", 0); err != nil {
		t.Fatal(err)
	}
	if err := e.cl.DeleteSession(ctx, "w1", "s1"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := e.cl.GetSession(ctx, "w1", "s1"); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("get after delete: %v, want 404", err)
	}
	// The pool claim was released: another session can hold p1.
	sess, err := e.cl.CreateSession(ctx, "w1", client.CreateSessionRequest{Active: "cloud",
		Backends: map[string]client.SessionBackend{"cloud": {Kind: client.KindPool, Pool: "cloud"}}})
	if err != nil || sess.Backends["cloud"].Claimed != "p1" || sess.ID == "" {
		t.Fatalf("create after delete: %+v, %v; want a new session holding p1", sess, err)
	}
}

func TestSessionIdempotencyKeyValidated(t *testing.T) {
	e := newSessionEnv(t)
	req, _ := http.NewRequest("GET", e.s.URL()+"/v1/workspaces/w1/sessions/s1/capabilities", nil)
	req.Header.Set("Authorization", "Bearer "+e.s.AdminToken())
	req.Header.Set(client.HeaderIdempotencyKey, "has space")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad Idempotency-Key: %d, want 400", resp.StatusCode)
	}
}

func TestSessionWorkspaceKeyIsScoped(t *testing.T) {
	e := newSessionEnv(t)
	ctx := context.Background()
	if _, err := e.cl.CreateWorkspace(ctx, "w2"); err != nil {
		t.Fatal(err)
	}
	key, err := e.cl.CreateKey(ctx, "w2")
	if err != nil {
		t.Fatal(err)
	}
	other := client.New(e.s.URL(), key)
	if _, err := other.GetSession(ctx, "w1", "s1"); !errors.Is(err, wire.ErrPermissionDenied) {
		t.Fatalf("w2's key on w1's session: %v, want 403", err)
	}
	if _, err := other.Session("w1", "s1").Capabilities(ctx); !errors.Is(err, wire.ErrPermissionDenied) {
		t.Fatalf("w2's key on w1's session target: %v, want 403", err)
	}
	if _, err := other.GetSession(ctx, "w2", "s1"); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("w1's session seen from w2: %v, want 404", err)
	}
}
