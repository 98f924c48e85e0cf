package client

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/outposthq/outpost/wire"
)

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   *wire.Error
	}{
		{"json error", 503, `{"error":{"code":"unavailable","reason":"agent_offline","message":"m","retryable":true}}`,
			&wire.Error{Code: wire.CodeUnavailable, Reason: wire.ReasonAgentOffline, Message: "m", Retryable: true}},
		{"plain text", 404, "404 page not found\n", &wire.Error{Code: wire.CodeNotFound, Message: "404 page not found"}},
		{"empty", 500, "", &wire.Error{Code: wire.CodeInternal, Message: "500 Internal Server Error"}},
		{"empty 502 (a proxy in front) is bad_gateway, now a served code", 502, "", &wire.Error{Code: wire.CodeBadGateway, Message: "502 Bad Gateway"}},
		{"empty 503 is retryable", 503, "", &wire.Error{Code: wire.CodeUnavailable, Message: "503 Service Unavailable", Retryable: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer tok" {
					t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			_, err := New(srv.URL, "tok").GetWorkspace(context.Background(), "w")
			var we *wire.Error
			if !errors.As(err, &we) || *we != *tt.want {
				t.Fatalf("err = %#v, want %#v", err, tt.want)
			}
			if !errors.Is(err, &wire.Error{Code: tt.want.Code}) {
				t.Fatalf("errors.Is by code fails for %v", err)
			}
		})
	}
}

func TestExecBytes(t *testing.T) {
	raw := []byte{0, 0xff, 'a'}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/v1/workspaces/w/agents/a/exec" || r.URL.Query().Get("encoding") != "base64" {
			t.Errorf("request %s %s", r.Method, r.URL)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"exitCode":3,"stdout":"` + base64.StdEncoding.EncodeToString(raw) + `","stderr":"","timedOut":true,"truncated":false,"durationMs":9}`))
	}))
	defer srv.Close()
	out, err := New(srv.URL+"/", "").Agent("w", "a").ExecBytes(context.Background(), ExecRequest{Argv: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != 3 || string(out.Stdout) != string(raw) || len(out.Stderr) != 0 || !out.TimedOut || out.DurationMs != 9 {
		t.Fatalf("%+v", out)
	}
}
