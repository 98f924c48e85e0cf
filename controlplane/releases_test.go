package controlplane

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/outposthq/outpost/agent/update"
	"github.com/outposthq/outpost/controlplane/client"
)

func TestAgentReleases(t *testing.T) {
	t.Run("none served", func(t *testing.T) {
		s := startServer(t, testConfig(t))
		if status, _ := call(t, s, "GET", "/v1/agent-releases/latest", "", nil); status != http.StatusNotFound {
			t.Fatalf("latest without --agent-releases: %d", status)
		}
	})
	dir := t.TempDir()
	for name, data := range map[string]string{"manifest.json": `{"version":"1.2.3","files":{}}`, "manifest.json.sig": "c2ln\n", "outpost-1.2.3-linux-amd64": "binary"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "secret"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.AgentReleases = dir
	s := startServer(t, cfg)
	ctx := context.Background()
	admin := adminClient(s)
	if _, err := admin.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	latest := func(t *testing.T, ws string) update.Latest {
		t.Helper()
		status, body := call(t, s, "GET", "/v1/agent-releases/latest?workspace="+ws, "", nil)
		if status != http.StatusOK {
			t.Fatalf("latest: %d %s", status, body)
		}
		var l update.Latest
		if err := json.Unmarshal(body, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := latest(t, "ws1"); !l.Updates || l.Version != "1.2.3" || l.Signature != "c2ln" || l.Manifest == "" {
		t.Fatalf("latest: %+v", l)
	}
	for _, tc := range []struct {
		name, path string
		status     int
	}{
		{"a release file", "/v1/agent-releases/files/outpost-1.2.3-linux-amd64", 200},
		{"missing", "/v1/agent-releases/files/nope", 404},
		{"up and out", "/v1/agent-releases/files/..%2Fsecret", 400},
		{"hidden", "/v1/agent-releases/files/.x", 400},
	} {
		if status, body := call(t, s, "GET", tc.path, "", nil); status != tc.status || (status == 200 && string(body) != "binary") {
			t.Errorf("%s: %d %q, want %d", tc.name, status, body, tc.status)
		}
	}
	off := false
	ws, err := admin.PatchWorkspace(ctx, "ws1", client.WorkspacePatch{AgentUpdates: &off})
	if err != nil || ws.AgentUpdates {
		t.Fatalf("patch: %+v, %v", ws, err)
	}
	if l := latest(t, "ws1"); l.Updates || l.Manifest != "" {
		t.Fatalf("latest with updates off: %+v", l)
	}
	if got, err := admin.GetWorkspace(ctx, "ws1"); err != nil || got.AgentUpdates {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if l := latest(t, "other"); !l.Updates {
		t.Fatalf("another workspace: %+v", l)
	}
}
