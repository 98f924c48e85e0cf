package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/tmpfs"
)

// tempFilesUnder lists the agent's temporary files anywhere under dir.
func tempFilesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".outpost-tmp-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// putRaw uploads body to path through the HTTP API and returns the status
// and the error code of the response.
func (e *agentEnv) putRaw(t *testing.T, path string, body []byte) (int, string) {
	t.Helper()
	u := e.cp.url + "/v1/workspaces/" + e.ws + "/agents/" + e.id + "/fs/file?" + url.Values{"path": {path}, "overwrite": {"true"}}.Encode()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &eb)
	return resp.StatusCode, eb.Error.Code
}

// TestDiskFullIs507 fills a 1 MiB disk under the agent's root through the
// HTTP API, with one write (1.5 MiB) and with a chunked upload (3 MiB):
// each is 507 insufficient_storage, the old file keeps its content, no
// temporary file stays, and the disk takes a small file afterwards.
func TestDiskFullIs507(t *testing.T) {
	e := newAgentEnv(t)
	full := filepath.Join(e.root, "full")
	if err := os.Mkdir(full, 0o755); err != nil {
		t.Fatal(err)
	}
	tmpfs.Mount(t, full, 1<<20)
	if err := os.WriteFile(filepath.Join(full, "f.txt"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{3 << 19, 3 << 20} {
		status, code := e.putRaw(t, "full/f.txt", bytes.Repeat([]byte("x"), size))
		if status != http.StatusInsufficientStorage || code != "insufficient_storage" {
			t.Fatalf("put of %d bytes: %d %q, want 507 insufficient_storage", size, status, code)
		}
		if b, err := os.ReadFile(filepath.Join(full, "f.txt")); err != nil || string(b) != "old" {
			t.Fatalf("after put of %d bytes the file holds %.20q (%v), want the old content", size, b, err)
		}
		if tmp := tempFilesUnder(t, e.root); len(tmp) > 0 {
			t.Fatalf("after put of %d bytes temporary files are left: %v", size, tmp)
		}
	}
	if status, code := e.putRaw(t, "full/small.txt", []byte("fits")); status != http.StatusOK {
		t.Fatalf("small put after the full ones: %d %q", status, code)
	}
}

// TestCrashMidUploadLeavesNoTempFile kills the agent (SIGKILL) while an
// upload is half sent, so its temporary file stays; the restarted agent
// removes it, and the old file keeps its content.
func TestCrashMidUploadLeavesNoTempFile(t *testing.T) {
	e := newAgentEnv(t)
	if err := os.WriteFile(filepath.Join(e.root, "f.bin"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	putCtx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	putDone := make(chan error, 1)
	go func() {
		_, err := e.target.Put(putCtx, "f.bin", pr, 8<<20, client.PutOptions{})
		putDone <- err
	}()
	// More than one chunk, so the upload is begun and a chunk written; the
	// rest never comes.
	go pw.Write(bytes.Repeat([]byte("y"), 5<<20))
	waitFor(t, statusTimeout, "a temporary file with content", func() error {
		for _, p := range tempFilesUnder(t, e.root) {
			if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
				return nil
			}
		}
		return errors.New("none yet")
	})
	e.agent.kill()
	if tmp := tempFilesUnder(t, e.root); len(tmp) == 0 {
		t.Fatal("the killed agent left no temporary file: the test proves nothing")
	}
	cancel()
	pw.CloseWithError(errors.New("client gone"))
	<-putDone

	e.agent = startAgent(t, e.agent.config, e.root)
	e.cp.waitStatus(e.ws, e.id, "online")
	if tmp := tempFilesUnder(t, e.root); len(tmp) > 0 {
		t.Fatalf("temporary files after the restart: %v", tmp)
	}
	if b, err := os.ReadFile(filepath.Join(e.root, "f.bin")); err != nil || string(b) != "old" {
		t.Fatalf("f.bin = %.20q, %v; want the old content", b, err)
	}
	es, err := e.target.List(ctx(t), "", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Path != "f.bin" {
		t.Fatalf("list after the restart = %+v, want only f.bin", es)
	}
}
