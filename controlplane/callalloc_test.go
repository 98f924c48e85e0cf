package controlplane

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/wire"
)

// BenchmarkAPICall is the load tool's call mix (bench/agents.go: caps,
// fs stat, exec), one call at a time through the control plane's handler
// to a mock agent on the embedded NATS server: its allocs/op and B/op are
// what a call costs the control plane's heap (issue 20: the GC runs when
// about the live heap has been allocated again), plus the mock agent's
// side of the round trip, which is the same before and after a change.
// The HTTP server's own parsing is not in it (the handler is called
// directly).
func BenchmarkAPICall(b *testing.B) {
	s := startServer(b, testConfig(b))
	if _, err := adminClient(s).CreateWorkspace(b.Context(), "ws1"); err != nil {
		b.Fatal(err)
	}
	ta := enrollAgent(b, s, "ws1", "a0")
	m, _ := serveMock(b, ta, agenttest.WithHello(mockHello))
	agenttest.On(m, wire.OpFsStat, func(req *wire.FsPathRequest) (*wire.FileEntry, error) {
		return &wire.FileEntry{Name: ".", Path: req.Path, Type: "dir", Mode: 0o755}, nil
	})
	m.HandleExec(func(req *wire.ExecRequest) (*wire.ExecResult, error) { return &wire.ExecResult{}, nil })
	h := s.Handler()
	token := "Bearer " + s.AdminToken()
	do := func(b *testing.B, method, path, body, want string) {
		// http.NewRequest, not httptest's: that one gives every request
		// a 4 KiB reader of its own, a third of what is measured.
		var req *http.Request
		var err error
		if body != "" {
			req, err = http.NewRequest(method, path, strings.NewReader(body))
		} else {
			req, err = http.NewRequest(method, path, nil)
		}
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(want)) {
			b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.Bytes())
		}
	}
	waitFor(b, waitLong, "the agent online", func() bool {
		req := httptest.NewRequest("GET", "/v1/workspaces/ws1/agents/a0/capabilities", nil)
		req.Header.Set("Authorization", token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code == http.StatusOK
	})
	for _, c := range []struct{ name, method, path, body, want string }{
		{"caps", "GET", "/v1/workspaces/ws1/agents/a0/capabilities", "", `"hostname":"fakehost"`},
		{"stat", "GET", "/v1/workspaces/ws1/agents/a0/fs/stat?path=.", "", `"path":"."`},
		{"exec", "POST", "/v1/workspaces/ws1/agents/a0/exec", `{"argv":["true"]}`, `"exitCode":0`},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				do(b, c.method, c.path, c.body, c.want)
			}
		})
	}
}
