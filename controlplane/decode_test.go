package controlplane

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// TestUnknownFieldsAre400 sends every kind of JSON body with a key that
// names no field (a misspelling, a wrong case, a field of another call, one
// nested in a backend): each is 400 invalid_argument whose message names
// the key, before anything reaches an agent.
func TestUnknownFieldsAre400(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	if _, err := adminClient(s).CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	enrollAgent(t, s, "ws1", "a1") // enrolled, never connected: nothing may reach it
	if _, err := adminClient(s).CreateSession(ctx, "ws1", client.CreateSessionRequest{
		ID: "s1", Active: "l", Backends: map[string]client.SessionBackend{"l": {Kind: client.KindAgent, Agent: "a1"}},
	}); err != nil {
		t.Fatal(err)
	}
	pub, _ := newKeys(t)
	const ag = "/v1/workspaces/ws1/agents/a1"
	tests := []struct {
		name, method, path, body string
		// wantField is the key's path as the message must quote it.
		wantField string
	}{
		{"workspace", "POST", "/v1/workspaces", `{"id":"ws9","name":"x"}`, "name"},
		{"workspace id in another case", "POST", "/v1/workspaces", `{"ID":"ws9"}`, "ID"},
		{"key", "POST", "/v1/workspaces/ws1/keys", `{"label":"ci"}`, "label"},
		{"enrollment token", "POST", "/v1/workspaces/ws1/enrollment-tokens", `{"agent":"a2","ttl":60}`, "ttl"},
		{"enroll", "POST", "/v1/enroll", `{"token":"x","publicKey":"` + pub + `","hostName":"h"}`, "hostName"},
		{"exec timeoutMS", "POST", ag + "/exec", `{"argv":["true"],"timeoutMS":100}`, "timeoutMS"},
		{"exec timeout", "POST", ag + "/exec", `{"argv":["true"],"timeout":100}`, "timeout"},
		{"exec through a session", "POST", "/v1/workspaces/ws1/sessions/s1/exec", `{"command":"true","outputcap":5}`, "outputcap"},
		{"process start", "POST", ag + "/processes", `{"argv":["sh"],"pty":true}`, "pty"},
		{"process stdin", "POST", ag + "/processes/p1/stdin", `{"writeId":"w1","txt":"x"}`, "txt"},
		{"process signal", "POST", ag + "/processes/p1/signal", `{"sig":"INT"}`, "sig"},
		{"process resize", "POST", ag + "/processes/p1/resize", `{"cols":80,"rows":24,"width":3}`, "width"},
		{"mkdir", "POST", ag + "/fs/mkdir", `{"path":"d","recursive":true}`, "recursive"},
		{"move", "POST", ag + "/fs/move", `{"from":"a","to":"b","force":true}`, "force"},
		{"git apply", "POST", ag + "/git/apply", `{"patch":"x","reverse":true}`, "reverse"},
		{"git commit", "POST", ag + "/git/commit", `{"message":"m","amend":true}`, "amend"},
		{"session", "POST", "/v1/workspaces/ws1/sessions", `{"id":"s2","backends":{"l":{"kind":"agent","agnt":"a1"}},"active":"l"}`, "backends.l.agnt"},
		{"swap", "POST", "/v1/workspaces/ws1/sessions/s1/swap", `{"to":"l","epoch":1}`, "epoch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := call(t, s, tt.method, tt.path, s.AdminToken(), tt.body)
			if status != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400; body %s", status, body)
			}
			var eb client.ErrorBody
			if err := json.Unmarshal(body, &eb); err != nil || eb.Error == nil {
				t.Fatalf("not an error body: %s", body)
			}
			if eb.Error.Code != wire.CodeInvalidArgument || !strings.Contains(eb.Error.Message, `"`+tt.wantField+`"`) {
				t.Fatalf("error = %s %q, want invalid_argument naming %q", eb.Error.Code, eb.Error.Message, tt.wantField)
			}
		})
	}

	// The same bodies without the stray key are accepted.
	if _, err := adminClient(s).CreateWorkspace(ctx, "ws9"); err != nil {
		t.Fatalf("a body of known fields only: %v", err)
	}
}

func TestCheckFields(t *testing.T) {
	type inner struct {
		Kind string `json:"kind"`
	}
	type embedded struct {
		Deep int `json:"deep"`
	}
	type outer struct {
		embedded
		Name    string            `json:"name,omitempty"`
		Plain   int               // no tag: its Go name
		Skip    int               `json:"-"`
		Env     map[string]string `json:"env"`
		Inner   *inner            `json:"inner"`
		Many    []inner           `json:"many"`
		ByName  map[string]inner  `json:"byName"`
		Raw     json.RawMessage   `json:"raw"`
		private int
	}
	tests := []struct {
		name, body, wantField string // wantField "" means accepted
	}{
		{"all known", `{"name":"x","Plain":1,"deep":2,"env":{"ANY":"1"},"inner":{"kind":"k"},"many":[{"kind":"a"}],"byName":{"b":{"kind":"c"}},"raw":{"whatever":1}}`, ""},
		{"null members", `{"inner":null,"many":null,"byName":null}`, ""},
		{"top level", `{"nmae":"x"}`, "nmae"},
		{"case differs", `{"Name":"x"}`, "Name"},
		{"dash field", `{"Skip":1}`, "Skip"},
		{"unexported", `{"private":1}`, "private"},
		{"in a pointer", `{"inner":{"knd":"k"}}`, "inner.knd"},
		{"in a slice", `{"many":[{"kind":"a"},{"kid":"b"}]}`, "many.1.kid"},
		{"in a map", `{"byName":{"b":{"kinds":"c"}}}`, "byName.b.kinds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v outer
			if err := json.Unmarshal([]byte(tt.body), &v); err != nil {
				t.Fatal(err)
			}
			err := checkFields([]byte(tt.body), reflect.TypeOf(&v))
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), `"`+tt.wantField+`"`) {
				t.Fatalf("err = %v, want one naming %q", err, tt.wantField)
			}
			if we := wire.AsError(err); we.Code != wire.CodeInvalidArgument || we.Reason != wire.ReasonUnknownField {
				t.Fatalf("err = %v, want invalid_argument/unknown_field", err)
			}
		})
	}
}
