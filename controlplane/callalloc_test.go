package controlplane

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
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

// writeJSON's pooled buffers write what json.Marshal and a newline would,
// with its length, whatever the buffer held before (a long body, then a
// short one), and a value that cannot be encoded is the internal error.
func TestWriteJSONBodies(t *testing.T) {
	long := map[string]string{"k": strings.Repeat("<x>", 5000)}
	for _, v := range []any{long, map[string]int{"a": 1}, long, []string{"é", "&"}, func() {}} {
		rec := httptest.NewRecorder()
		writeJSON(rec, http.StatusOK, v)
		want, err := json.Marshal(v)
		status := http.StatusOK
		if err != nil {
			want, status = []byte(`{"error":{"code":"internal","reason":"","message":"encode response","retryable":false}}`), http.StatusInternalServerError
		}
		want = append(want, '\n')
		if rec.Code != status || rec.Body.String() != string(want) ||
			rec.Header().Get("Content-Length") != strconv.Itoa(len(want)) || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("writeJSON(%T): %d %q (length %s), want %d %q", v, rec.Code, ends(rec.Body.String()), rec.Header().Get("Content-Length"), status, ends(string(want)))
		}
	}
}

// ends is s cut to its first and last 40 bytes, for messages.
func ends(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:40] + "…" + s[len(s)-40:]
}
