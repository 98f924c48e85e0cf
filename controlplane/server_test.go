package controlplane

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

func TestHTTPCalls(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	for _, ws := range []string{"ws1", "ws2"} {
		if _, err := admin.CreateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	key1, err := admin.CreateKey(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	a1 := enrollAgent(t, s, "ws1", "a1")
	_ = a1
	adm := s.AdminToken()
	k1 := key1

	tests := []struct {
		name       string
		method     string
		path       string
		token      string
		body       any
		wantStatus int
		wantCode   wire.Code
		wantReason string
	}{
		{"healthz", "GET", "/healthz", "", nil, 200, "", ""},
		{"healthz ignores token", "GET", "/healthz", "junk", nil, 200, "", ""},

		{"create workspace", "POST", "/v1/workspaces", adm, `{"id":"ws3"}`, 201, "", ""},
		{"create workspace exists", "POST", "/v1/workspaces", adm, `{"id":"ws1"}`, 409, wire.CodeConflict, wire.ReasonAlreadyExists},
		{"create workspace bad id", "POST", "/v1/workspaces", adm, `{"id":"Bad.Id"}`, 400, wire.CodeInvalidArgument, "invalid_id"},
		{"create workspace no id", "POST", "/v1/workspaces", adm, `{}`, 400, wire.CodeInvalidArgument, "invalid_id"},
		{"create workspace malformed", "POST", "/v1/workspaces", adm, `{"id":`, 400, wire.CodeInvalidArgument, ""},
		{"create workspace wrong type", "POST", "/v1/workspaces", adm, `{"id":3}`, 400, wire.CodeInvalidArgument, ""},
		{"create workspace too large", "POST", "/v1/workspaces", adm, `{"id":"` + strings.Repeat("a", maxJSONBody) + `"}`, 413, wire.CodePayloadTooLarge, ""},
		{"create workspace no token", "POST", "/v1/workspaces", "", `{"id":"ws4"}`, 401, wire.CodeUnauthenticated, ""},
		{"create workspace bad token", "POST", "/v1/workspaces", "nope", `{"id":"ws4"}`, 401, wire.CodeUnauthenticated, ""},
		{"create workspace with key", "POST", "/v1/workspaces", k1, `{"id":"ws4"}`, 403, wire.CodePermissionDenied, ""},

		{"get workspace", "GET", "/v1/workspaces/ws1", adm, nil, 200, "", ""},
		{"get workspace with key", "GET", "/v1/workspaces/ws1", k1, nil, 200, "", ""},
		{"get workspace other ws key", "GET", "/v1/workspaces/ws2", k1, nil, 403, wire.CodePermissionDenied, ""},
		{"get workspace missing", "GET", "/v1/workspaces/nope", adm, nil, 404, wire.CodeNotFound, ""},
		{"get workspace bad id", "GET", "/v1/workspaces/BAD", adm, nil, 400, wire.CodeInvalidArgument, "invalid_id"},
		{"get workspace no token", "GET", "/v1/workspaces/ws1", "", nil, 401, wire.CodeUnauthenticated, ""},

		{"create key", "POST", "/v1/workspaces/ws1/keys", adm, `{}`, 201, "", ""},
		{"create key empty body", "POST", "/v1/workspaces/ws1/keys", adm, nil, 201, "", ""},
		{"create key with key", "POST", "/v1/workspaces/ws1/keys", k1, `{}`, 403, wire.CodePermissionDenied, ""},
		{"create key missing ws", "POST", "/v1/workspaces/nope/keys", adm, `{}`, 404, wire.CodeNotFound, ""},

		{"enrollment token", "POST", "/v1/workspaces/ws1/enrollment-tokens", adm, `{}`, 201, "", ""},
		{"enrollment token with key", "POST", "/v1/workspaces/ws1/enrollment-tokens", k1, `{"agent":"a9","pool":"p","ttlSeconds":60}`, 201, "", ""},
		{"enrollment token other ws", "POST", "/v1/workspaces/ws2/enrollment-tokens", k1, `{}`, 403, wire.CodePermissionDenied, ""},
		{"enrollment token bad agent", "POST", "/v1/workspaces/ws1/enrollment-tokens", adm, `{"agent":"A B"}`, 400, wire.CodeInvalidArgument, "invalid_id"},
		{"enrollment token bad pool", "POST", "/v1/workspaces/ws1/enrollment-tokens", adm, `{"pool":"x.y"}`, 400, wire.CodeInvalidArgument, "invalid_id"},
		{"enrollment token negative ttl", "POST", "/v1/workspaces/ws1/enrollment-tokens", adm, `{"ttlSeconds":-1}`, 400, wire.CodeInvalidArgument, ""},
		{"enrollment token missing ws", "POST", "/v1/workspaces/nope/enrollment-tokens", adm, `{}`, 404, wire.CodeNotFound, ""},

		{"enroll unknown token", "POST", "/v1/enroll", "", `{"token":"nope","publicKey":"` + a1.pub + `"}`, 401, wire.CodeUnauthenticated, ""},
		{"enroll no token", "POST", "/v1/enroll", "", `{"publicKey":"` + a1.pub + `"}`, 401, wire.CodeUnauthenticated, ""},
		{"enroll malformed", "POST", "/v1/enroll", "", `[`, 400, wire.CodeInvalidArgument, ""},

		{"list agents", "GET", "/v1/workspaces/ws1/agents", k1, nil, 200, "", ""},
		{"list agents other ws", "GET", "/v1/workspaces/ws2/agents", k1, nil, 403, wire.CodePermissionDenied, ""},
		{"list agents missing ws", "GET", "/v1/workspaces/nope/agents", adm, nil, 404, wire.CodeNotFound, ""},
		{"get agent", "GET", "/v1/workspaces/ws1/agents/a1", k1, nil, 200, "", ""},
		{"get agent missing", "GET", "/v1/workspaces/ws1/agents/zz", k1, nil, 404, wire.CodeNotFound, ""},
		{"get agent bad id", "GET", "/v1/workspaces/ws1/agents/Z_Z", k1, nil, 400, wire.CodeInvalidArgument, "invalid_id"},
		{"get agent other ws", "GET", "/v1/workspaces/ws2/agents/a1", k1, nil, 403, wire.CodePermissionDenied, ""},
		{"get agent wrong ws", "GET", "/v1/workspaces/ws2/agents/a1", adm, nil, 404, wire.CodeNotFound, ""},
		{"revoke agent missing", "DELETE", "/v1/workspaces/ws1/agents/zz", k1, nil, 404, wire.CodeNotFound, ""},
		{"revoke agent no token", "DELETE", "/v1/workspaces/ws1/agents/a1", "", nil, 401, wire.CodeUnauthenticated, ""},
		{"revoke agent other ws", "DELETE", "/v1/workspaces/ws2/agents/a1", k1, nil, 403, wire.CodePermissionDenied, ""},

		{"exec unknown agent", "POST", "/v1/workspaces/ws1/agents/zz/exec", k1, `{"argv":["true"]}`, 404, wire.CodeNotFound, ""},
		{"exec bad body", "POST", "/v1/workspaces/ws1/agents/a1/exec", k1, `{}`, 400, wire.CodeInvalidArgument, ""},
		{"exec both stdins", "POST", "/v1/workspaces/ws1/agents/a1/exec", k1, `{"argv":["cat"],"stdin":"a","stdinBase64":"YQ=="}`, 400, wire.CodeInvalidArgument, ""},
		{"exec bad base64", "POST", "/v1/workspaces/ws1/agents/a1/exec", k1, `{"argv":["cat"],"stdinBase64":"!!"}`, 400, wire.CodeInvalidArgument, ""},
		{"exec bad encoding", "POST", "/v1/workspaces/ws1/agents/a1/exec?encoding=hex", k1, `{"argv":["true"]}`, 400, wire.CodeInvalidArgument, ""},
		{"exec too large", "POST", "/v1/workspaces/ws1/agents/a1/exec", k1, `{"argv":["cat"],"stdin":"` + strings.Repeat("x", maxExecBody) + `"}`, 413, wire.CodePayloadTooLarge, ""},
		{"exec other ws", "POST", "/v1/workspaces/ws2/agents/a1/exec", k1, `{"argv":["true"]}`, 403, wire.CodePermissionDenied, ""},
		{"exec no token", "POST", "/v1/workspaces/ws1/agents/a1/exec", "", `{"argv":["true"]}`, 401, wire.CodeUnauthenticated, ""},

		{"unknown route", "GET", "/v1/nothing", adm, nil, 404, wire.CodeNotFound, "no_route"},
		{"wrong method", "PUT", "/v1/workspaces/ws1", adm, nil, 405, wire.CodeInvalidArgument, "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := call(t, s, tt.method, tt.path, tt.token, tt.body)
			if status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", status, tt.wantStatus, body)
			}
			if tt.wantCode == "" {
				if status == http.StatusNoContent {
					return
				}
				if !json.Valid(body) {
					t.Fatalf("body is not JSON: %s", body)
				}
				return
			}
			code, reason := errorCode(t, body)
			if code != tt.wantCode || (tt.wantReason != "" && reason != tt.wantReason) {
				t.Fatalf("error = %s/%s, want %s/%s; body %s", code, reason, tt.wantCode, tt.wantReason, body)
			}
		})
	}
}

func TestResultShapes(t *testing.T) {
	s := startServer(t, testConfig(t))
	adm := s.AdminToken()

	check := func(t *testing.T, body []byte, fields ...string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		for _, f := range fields {
			if _, ok := m[f]; !ok {
				t.Errorf("field %q missing from %s", f, body)
			}
		}
		return m
	}
	status, body := call(t, s, "GET", "/healthz", "", nil)
	if m := check(t, body, "status"); status != 200 || m["status"] != "ok" {
		t.Fatalf("healthz: %d %s", status, body)
	}
	_, body = call(t, s, "POST", "/v1/workspaces", adm, `{"id":"w"}`)
	check(t, body, "id", "createdAt")
	_, body = call(t, s, "GET", "/v1/workspaces/w", adm, nil)
	check(t, body, "id", "createdAt")
	_, body = call(t, s, "POST", "/v1/workspaces/w/keys", adm, `{}`)
	check(t, body, "id", "token")
	_, body = call(t, s, "GET", "/v1/workspaces/w/keys", adm, nil)
	if keys := check(t, body, "keys")["keys"].([]any); len(keys) != 1 {
		t.Fatalf("keys: %s", body)
	}
	_, body = call(t, s, "POST", "/v1/workspaces/w/enrollment-tokens", adm, `{"pool":"cloud"}`)
	tok := check(t, body, "id", "token", "expiresAt")
	_, body = call(t, s, "GET", "/v1/workspaces/w/enrollment-tokens", adm, nil)
	if toks := check(t, body, "tokens")["tokens"].([]any); len(toks) != 1 {
		t.Fatalf("tokens: %s", body)
	}
	pub, _ := newKeys(t)
	_, body = call(t, s, "POST", "/v1/enroll", "", map[string]string{"token": tok["token"].(string), "publicKey": pub})
	en := check(t, body, "workspace", "agent", "pool", "jwt", "natsUrls")
	if en["pool"] != "cloud" || !strings.HasPrefix(en["agent"].(string), "cloud-") || len(en["agent"].(string)) != len("cloud-")+6 {
		t.Fatalf("pool enrollment: %s", body)
	}
	_, body = call(t, s, "GET", "/v1/workspaces/w/agents/"+en["agent"].(string), adm, nil)
	ag := check(t, body, "id", "name", "pool", "status", "version", "os", "arch", "hostname", "capabilities")
	if ag["status"] != "offline" {
		t.Fatalf("never connected agent: %s", body)
	}
	_, body = call(t, s, "GET", "/v1/workspaces/w/agents", adm, nil)
	if m := check(t, body, "agents"); len(m["agents"].([]any)) != 1 {
		t.Fatalf("list: %s", body)
	}
	status, body = call(t, s, "DELETE", "/v1/workspaces/w/agents/"+en["agent"].(string), adm, nil)
	if status != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("delete: %d %s", status, body)
	}
	_, body = call(t, s, "GET", "/v1/workspaces/w/agents", adm, nil)
	if m := check(t, body, "agents"); len(m["agents"].([]any)) != 0 {
		t.Fatalf("list after revoke: %s", body)
	}
	status, body = call(t, s, "POST", "/v1/workspaces/nope/keys", "bad", `{}`)
	code, _ := errorCode(t, body)
	if m := check(t, body, "error"); status != 401 || code != wire.CodeUnauthenticated {
		t.Fatalf("error body: %d %v", status, m)
	}
	var raw map[string]map[string]any
	_ = json.Unmarshal(body, &raw)
	for _, f := range []string{"code", "reason", "message", "retryable"} {
		if _, ok := raw["error"][f]; !ok {
			t.Errorf("error body lacks %q: %s", f, body)
		}
	}
}

func TestRestart(t *testing.T) {
	cfg := testConfig(t)
	s1 := startServer(t, cfg)
	ctx := context.Background()
	admin := adminClient(s1)
	if _, err := admin.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	key, err := admin.CreateKey(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	a1 := enrollAgent(t, s1, "ws1", "a1")
	m, nc := serveMock(t, a1, agenttest.WithHello(mockHello))
	waitFor(t, waitLong, "a1 online", func() bool {
		a, err := admin.GetAgent(ctx, "ws1", "a1")
		return err == nil && a.Status == client.StatusOnline
	})
	m.Close()
	nc.Close()
	token := s1.AdminToken()
	natsURLs := s1.NATSURLs()
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	fi, err := os.Stat(filepath.Join(cfg.StateDir, adminTokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file: %v %v", fi, err)
	}

	cfg.NATSListen = strings.TrimPrefix(natsURLs[0], "nats://")
	s2 := startServer(t, cfg)
	if s2.AdminToken() != token {
		t.Fatalf("admin token changed across restart")
	}
	if got := s2.NATSURLs(); got[0] != natsURLs[0] {
		t.Fatalf("nats urls %v, want %v", got, natsURLs)
	}
	admin2 := adminClient(s2)
	if _, err := admin2.GetWorkspace(ctx, "ws1"); err != nil {
		t.Fatalf("workspace after restart: %v", err)
	}
	if _, err := client.New(s2.URL(), key).GetWorkspace(ctx, "ws1"); err != nil {
		t.Fatalf("workspace key after restart: %v", err)
	}
	ag, err := admin2.GetAgent(ctx, "ws1", "a1")
	if err != nil {
		t.Fatalf("agent after restart: %v", err)
	}
	if ag.LastSeen.IsZero() || ag.Version != "test-1.0" || !ag.Capabilities["pty"] {
		t.Fatalf("agent after restart lost its facts: %+v", ag)
	}
	// The agent's credentials still work against the restarted server.
	serveMock(t, a1)
	waitFor(t, waitLong, "a1 online after restart", func() bool {
		a, err := admin2.GetAgent(ctx, "ws1", "a1")
		return err == nil && a.Status == client.StatusOnline
	})
}
