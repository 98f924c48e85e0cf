package enroll

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// fakeControlPlane serves POST /v1/enroll with the given handler and records
// the raw bodies it received.
type fakeControlPlane struct {
	mu     sync.Mutex
	bodies [][]byte
	srv    *httptest.Server
}

// testAgent is the agent the tests enroll.
var testAgent = subjects.Agent{Workspace: "ws", ID: "a1"}

func newFakeControlPlane(t testing.TB, h func(w http.ResponseWriter, req Request)) *fakeControlPlane {
	t.Helper()
	f := &fakeControlPlane{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+EnrollPath, func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.mu.Unlock()
		var req Request
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, wire.Errorf(wire.CodeInvalidArgument, "", "bad body: %v", err))
			return
		}
		h(w, req)
	})
	mux.HandleFunc("POST /moved/v1/enroll", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/v1/enroll", http.StatusPermanentRedirect)
	})
	f.srv = httptest.NewServer(mux) // listens on 127.0.0.1
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeControlPlane) lastBody() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		return nil
	}
	return f.bodies[len(f.bodies)-1]
}

func writeError(w http.ResponseWriter, e *wire.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.HTTPStatus())
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// checkRequest is what a control plane checks; the test additionally checks
// that no seed is anywhere in the body.
func checkRequest(req Request) *wire.Error {
	if req.Token != "opt_good" {
		return wire.Errorf(wire.CodeUnauthenticated, "", "unknown, expired or used token")
	}
	if !nkeys.IsValidPublicUserKey(req.PublicKey) {
		return wire.Errorf(wire.CodeInvalidArgument, "", "publicKey is not a user public key")
	}
	return nil
}

func TestEnroll(t *testing.T) {
	a := newAuthority(t)
	s := startServer(t, a, t.TempDir())
	svc := serviceConn(t, a, s)

	var got Request
	cp := newFakeControlPlane(t, func(w http.ResponseWriter, req Request) {
		if e := checkRequest(req); e != nil {
			writeError(w, e)
			return
		}
		got = req
		token, err := a.IssueAgentJWT(testAgent, req.PublicKey)
		if err != nil {
			writeError(w, wire.Errorf(wire.CodeInternal, "", "%v", err))
			return
		}
		writeJSON(w, Response{Workspace: "ws", Agent: "a1", JWT: token, NATSURLs: []string{s.ClientURL()}})
	})

	cfg, err := Enroll(context.Background(), cp.srv.URL+"/", "opt_good", "laptop")
	if err != nil {
		t.Fatalf("Enroll: %v", err)
	}
	if got.Name != "laptop" || got.OS != runtime.GOOS || got.Arch != runtime.GOARCH || got.Hostname == "" {
		t.Errorf("request name %q os %q arch %q hostname %q", got.Name, got.OS, got.Arch, got.Hostname)
	}
	if pub := publicKeyOf(t, cfg); pub != got.PublicKey {
		t.Errorf("config seed is for %s, the request sent %s", pub, got.PublicKey)
	}
	if cfg.URL != cp.srv.URL || cfg.Workspace != "ws" || cfg.Agent != "a1" || len(cfg.NATSURLs) != 1 {
		t.Errorf("config %v", cfg)
	}

	// The seed never left: not in the body, no field named seed, no value
	// that is any nkey seed.
	body := cp.lastBody()
	if strings.Contains(string(body), cfg.Seed) {
		t.Fatal("request body carries the seed")
	}
	var fields map[string]any
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		if strings.Contains(strings.ToLower(k), "seed") {
			t.Errorf("request has a field %q", k)
		}
		if s, ok := v.(string); ok {
			if _, _, err := nkeys.DecodeSeed([]byte(s)); err == nil {
				t.Errorf("request field %q holds an nkey seed", k)
			}
		}
	}

	// The enrolled config works end to end.
	nc, err := connectAgent(t, cfg)
	if err != nil {
		t.Fatalf("connect with enrolled config: %v", err)
	}
	rpc, _ := subjects.Agent{Workspace: cfg.Workspace, ID: cfg.Agent}.RPC()
	sub, err := nc.Subscribe(rpc, func(m *nats.Msg) { _ = m.Respond([]byte("ok")) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The control plane's request carries a reply subject under the agent's
	// own subjects: the only replies an agent may publish.
	reply, _ := subjects.Agent{Workspace: cfg.Workspace, ID: cfg.Agent}.Reply("test", "1")
	replies, err := svc.SubscribeSync(reply)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.PublishRequest(rpc, reply, nil); err != nil {
		t.Fatal(err)
	}
	if m, err := replies.NextMsg(waitLong); err != nil || string(m.Data) != "ok" {
		t.Fatalf("request to enrolled agent: %v", err)
	}
}

func TestEnrollErrors(t *testing.T) {
	a := newAuthority(t)
	otherKP, _ := nkeys.CreateUser()
	otherPub, _ := otherKP.PublicKey()
	otherJWT, err := a.IssueAgentJWT(testAgent, otherPub)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		token    string
		path     string // appended to the base URL
		handler  func(w http.ResponseWriter, req Request)
		wantCode wire.Code // "" when the error is not a *wire.Error
		reason   string
	}{
		{
			name:  "used token",
			token: "opt_used",
			handler: func(w http.ResponseWriter, req Request) {
				writeError(w, &wire.Error{Code: wire.CodeUnauthenticated, Reason: "token_used", Message: "token already used"})
			},
			wantCode: wire.CodeUnauthenticated,
			reason:   "token_used",
		},
		{
			name:  "plain text error",
			token: "opt_good",
			handler: func(w http.ResponseWriter, req Request) {
				http.Error(w, "upstream down", http.StatusServiceUnavailable)
			},
			wantCode: wire.CodeUnavailable,
		},
		{
			name:  "jwt for another key",
			token: "opt_good",
			handler: func(w http.ResponseWriter, req Request) {
				writeJSON(w, Response{Workspace: "ws", Agent: "a1", JWT: otherJWT, NATSURLs: []string{"nats://127.0.0.1:4222"}})
			},
		},
		{
			name:  "invalid agent id",
			token: "opt_good",
			handler: func(w http.ResponseWriter, req Request) {
				token, _ := a.IssueAgentJWT(testAgent, req.PublicKey)
				writeJSON(w, Response{Workspace: "ws", Agent: "a1.>", JWT: token, NATSURLs: []string{"nats://127.0.0.1:4222"}})
			},
		},
		{
			name:  "no nats urls",
			token: "opt_good",
			handler: func(w http.ResponseWriter, req Request) {
				token, _ := a.IssueAgentJWT(testAgent, req.PublicKey)
				writeJSON(w, Response{Workspace: "ws", Agent: "a1", JWT: token})
			},
		},
		{
			name:  "not json",
			token: "opt_good",
			handler: func(w http.ResponseWriter, req Request) {
				io.WriteString(w, "<html>hello</html>")
			},
		},
		{
			name:    "redirect refused",
			token:   "opt_good",
			path:    "/moved",
			handler: func(w http.ResponseWriter, req Request) { t.Error("redirect was followed") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := newFakeControlPlane(t, tt.handler)
			cfg, err := Enroll(context.Background(), cp.srv.URL+tt.path, tt.token, "")
			if err == nil {
				t.Fatalf("Enroll = %v, want an error", cfg)
			}
			var we *wire.Error
			isWire := errors.As(err, &we)
			if tt.wantCode == "" {
				if isWire {
					t.Logf("error %v", err)
				}
				return
			}
			if !isWire {
				t.Fatalf("error %T %v, want *wire.Error", err, err)
			}
			if we.Code != tt.wantCode || (tt.reason != "" && we.Reason != tt.reason) {
				t.Fatalf("error %v, want code %s reason %q", we, tt.wantCode, tt.reason)
			}
			if !errors.Is(err, &wire.Error{Code: tt.wantCode}) {
				t.Fatalf("errors.Is(%v, %s) = false", err, tt.wantCode)
			}
		})
	}
}

func TestEnrollBadArguments(t *testing.T) {
	tests := []struct{ name, url, token string }{
		{"no scheme", "127.0.0.1:8080", "opt_x"},
		{"nats scheme", "nats://127.0.0.1:4222", "opt_x"},
		{"empty url", "", "opt_x"},
		{"empty token", "http://127.0.0.1:1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Enroll(context.Background(), tt.url, tt.token, ""); err == nil {
				t.Fatal("Enroll succeeded, want an error")
			}
		})
	}
}

func validResponseBody(t testing.TB) []byte {
	t.Helper()
	a := newAuthority(t)
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	token, err := a.IssueAgentJWT(testAgent, pub)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(Response{Workspace: "ws", Agent: "a1", Pool: "cloud", JWT: token, NATSURLs: []string{"nats://127.0.0.1:4222", "tls://nats.example.com:4222"}})
	return b
}

func TestDecodeResponse(t *testing.T) {
	valid := validResponseBody(t)
	var base map[string]any
	if err := json.Unmarshal(valid, &base); err != nil {
		t.Fatal(err)
	}
	with := func(k string, v any) []byte {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return b
	}
	tests := []struct {
		name    string
		body    []byte
		wantErr bool
	}{
		{"valid", valid, false},
		{"no pool", with("pool", nil), false},
		{"empty", []byte(""), true},
		{"null", []byte("null"), true},
		{"array", []byte("[]"), true},
		{"bad workspace", with("workspace", "WS"), true},
		{"wildcard agent", with("agent", "*"), true},
		{"bad pool", with("pool", "a b"), true},
		{"no jwt", with("jwt", nil), true},
		{"garbage jwt", with("jwt", "a.b.c"), true},
		{"no nats urls", with("natsUrls", nil), true},
		{"empty nats url", with("natsUrls", []string{""}), true},
		{"http nats url", with("natsUrls", []string{"http://127.0.0.1:4222"}), true},
		{"comma nats url", with("natsUrls", []string{"nats://a:1,nats://b:2"}), true},
		{"nats url without host", with("natsUrls", []string{"nats://"}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeResponse(tt.body)
			if (err != nil) != tt.wantErr {
				t.Fatalf("DecodeResponse error = %v, want error: %v", err, tt.wantErr)
			}
		})
	}
}

func FuzzDecodeEnrollResponse(f *testing.F) {
	valid := validResponseBody(f)
	f.Add(valid)
	for _, s := range []string{
		"", "null", "[]", "{}", `{"workspace":"ws","agent":"a1"}`,
		`{"workspace":"ws","agent":"*","jwt":"x","natsUrls":["nats://h:1"]}`,
		`{"workspace":"ws","agent":"a1","jwt":"a.b.c","natsUrls":["nats://h:1"]}`,
		`{"natsUrls":[null]}`, `{"natsUrls":"nats://h:1"}`,
		strings.Replace(string(valid), `"a1"`, `"a1.>"`, 1),
		strings.Replace(string(valid), `nats://127.0.0.1:4222`, `http://x`, 1),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeResponse(data)
		if err != nil {
			return
		}
		if err := (subjects.Agent{Workspace: r.Workspace, ID: r.Agent}).Validate(); err != nil {
			t.Fatalf("accepted invalid agent: %v", err)
		}
		if r.Pool != "" && subjects.ValidateID(r.Pool) != nil {
			t.Fatalf("accepted invalid pool %q", r.Pool)
		}
		if len(r.NATSURLs) == 0 {
			t.Fatal("accepted no nats urls")
		}
		// What was accepted survives a round trip unchanged.
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := DecodeResponse(b)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if r2.Workspace != r.Workspace || r2.Agent != r.Agent || r2.Pool != r.Pool || r2.JWT != r.JWT || strings.Join(r2.NATSURLs, " ") != strings.Join(r.NATSURLs, " ") {
			t.Fatalf("round trip %+v != %+v", r2, r)
		}
	})
}
