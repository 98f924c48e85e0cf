package controlplane

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// filesEnv is a control plane with one real agent serving a temporary root.
type filesEnv struct {
	s    *Server
	root string
	tgt  *client.Target
	path string // the agent's target prefix
}

func newFilesEnv(t *testing.T) *filesEnv {
	t.Helper()
	s := startServer(t, testConfig(t))
	if _, err := adminClient(s).CreateWorkspace(context.Background(), "w1"); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return &filesEnv{s: s, root: root, tgt: realAgent(t, s, "w1", "a1", root), path: "/v1/workspaces/w1/agents/a1"}
}

func writeFile(t testing.TB, name, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, mode); err != nil {
		t.Fatal(err)
	}
}

func TestFilesCalls(t *testing.T) {
	e := newFilesEnv(t)
	ctx := context.Background()
	writeFile(t, filepath.Join(e.root, "dir", "a.txt"), "alpha", 0o640)
	writeFile(t, filepath.Join(e.root, "dir", "sub", "b.txt"), "bravo!", 0o644)

	t.Run("stat", func(t *testing.T) {
		st, err := e.tgt.Stat(ctx, "/dir/a.txt")
		if err != nil {
			t.Fatal(err)
		}
		if st.Name != "a.txt" || st.Path != "dir/a.txt" || st.Type != "file" || st.Size != 5 || st.Mode != "0640" || st.ModTime.IsZero() {
			t.Fatalf("stat = %+v", st)
		}
		_, err = e.tgt.Stat(ctx, "nope")
		wantCode(t, err, wire.CodeNotFound, "")
		status, body := call(t, e.s, "GET", e.path+"/fs/stat?path=dir", e.s.AdminToken(), nil)
		for _, f := range []string{`"name":"dir"`, `"path":"dir"`, `"type":"dir"`, `"size":`, `"mode":"0755"`, `"modTime":`} {
			if status != 200 || !strings.Contains(string(body), f) {
				t.Errorf("%d %s: want %s", status, body, f)
			}
		}
	})

	t.Run("list", func(t *testing.T) {
		es, err := e.tgt.List(ctx, "dir", false)
		if err != nil {
			t.Fatal(err)
		}
		if got := statPaths(es); got != "dir/a.txt dir/sub" {
			t.Fatalf("list = %s", got)
		}
		es, err = e.tgt.List(ctx, "/", true)
		if err != nil {
			t.Fatal(err)
		}
		if got := statPaths(es); got != "dir dir/a.txt dir/sub dir/sub/b.txt" {
			t.Fatalf("recursive list = %s", got)
		}
		status, body := call(t, e.s, "GET", e.path+"/fs/list?path=dir&recursive=maybe", e.s.AdminToken(), nil)
		if status != 400 {
			t.Fatalf("bad recursive: %d %s", status, body)
		}
	})

	t.Run("put get and mode", func(t *testing.T) {
		res, err := e.tgt.Put(ctx, "new/deep/c.txt", strings.NewReader("charlie"), 7, client.PutOptions{Mode: 0o600})
		if err != nil {
			t.Fatal(err)
		}
		if res.Path != "new/deep/c.txt" || res.Size != 7 || res.SHA256 != sha256Hex([]byte("charlie")) {
			t.Fatalf("put = %+v", res)
		}
		fi, err := os.Stat(filepath.Join(e.root, "new", "deep", "c.txt"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("on disk: %v %v", fi, err)
		}
		// Overwriting keeps the mode.
		if _, err := e.tgt.Put(ctx, "new/deep/c.txt", strings.NewReader("delta"), -1, client.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(filepath.Join(e.root, "new", "deep", "c.txt")); fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode after overwrite %v", fi.Mode())
		}
		f, err := e.tgt.Get(ctx, "new/deep/c.txt")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(f.Body)
		f.Body.Close()
		if string(got) != "delta" || f.Size != 5 {
			t.Fatalf("get = %q (%d)", got, f.Size)
		}
		_, err = e.tgt.Put(ctx, "new/deep/c.txt", strings.NewReader("x"), 1, client.PutOptions{NoOverwrite: true})
		wantCode(t, err, wire.CodeConflict, wire.ReasonAlreadyExists)
		status, body := call(t, e.s, "PUT", e.path+"/fs/file?path=m.txt&mode=999", e.s.AdminToken(), "x")
		if status != 400 {
			t.Fatalf("bad mode: %d %s", status, body)
		}
		status, body = call(t, e.s, "PUT", e.path+"/fs/file?path=dir", e.s.AdminToken(), "x")
		if status != 400 {
			t.Fatalf("put on a directory: %d %s", status, body)
		}
		_, err = e.tgt.Get(ctx, "missing.txt")
		wantCode(t, err, wire.CodeNotFound, "")
		_, err = e.tgt.Get(ctx, "dir")
		wantCode(t, err, wire.CodeInvalidArgument, "")
	})

	t.Run("empty file", func(t *testing.T) {
		if _, err := e.tgt.Put(ctx, "empty", strings.NewReader(""), 0, client.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		status, body := call(t, e.s, "GET", e.path+"/fs/file?path=empty", e.s.AdminToken(), nil)
		if status != 200 || len(body) != 0 {
			t.Fatalf("%d %q", status, body)
		}
	})

	t.Run("mkdir move remove", func(t *testing.T) {
		st, err := e.tgt.Mkdir(ctx, "made", false)
		if err != nil || st.Type != "dir" || st.Path != "made" {
			t.Fatalf("mkdir = %+v, %v", st, err)
		}
		status, _ := call(t, e.s, "POST", e.path+"/fs/mkdir", e.s.AdminToken(), `{"path":"m2/x/y","parents":true}`)
		if status != 201 {
			t.Fatalf("mkdir parents: %d", status)
		}
		_, err = e.tgt.Mkdir(ctx, "nothere/x", false)
		wantCode(t, err, wire.CodeNotFound, "")
		_, err = e.tgt.Mkdir(ctx, "dir/a.txt", true)
		wantCode(t, err, wire.CodeConflict, "")

		st, err = e.tgt.Move(ctx, "dir/a.txt", "made/a2.txt", false)
		if err != nil || st.Path != "made/a2.txt" || st.Size != 5 {
			t.Fatalf("move = %+v, %v", st, err)
		}
		_, err = e.tgt.Move(ctx, "made/a2.txt", "dir/sub/b.txt", false)
		wantCode(t, err, wire.CodeConflict, wire.ReasonAlreadyExists)
		if _, err := e.tgt.Move(ctx, "made/a2.txt", "dir/sub/b.txt", true); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(e.root, "dir", "sub", "b.txt")); string(b) != "alpha" {
			t.Fatalf("moved over: %q", b)
		}
		_, err = e.tgt.Move(ctx, "gone", "x", false)
		wantCode(t, err, wire.CodeNotFound, "")

		err = e.tgt.Remove(ctx, "dir", false)
		wantCode(t, err, wire.CodeConflict, wire.ReasonNotEmpty)
		status, _ = call(t, e.s, "DELETE", e.path+"/fs?path=dir&recursive=true", e.s.AdminToken(), nil)
		if status != 204 {
			t.Fatalf("remove recursive: %d", status)
		}
		if _, err := os.Stat(filepath.Join(e.root, "dir")); !os.IsNotExist(err) {
			t.Fatalf("dir still there: %v", err)
		}
		wantCode(t, e.tgt.Remove(ctx, "dir", true), wire.CodeNotFound, "")
	})
}

func statPaths(es []client.FileStat) string {
	var p []string
	for _, e := range es {
		p = append(p, e.Path)
	}
	return strings.Join(p, " ")
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// pseudoRandom is n reproducible bytes that do not compress.
func pseudoRandom(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func TestRangeReads(t *testing.T) {
	e := newFilesEnv(t)
	ctx := context.Background()
	// Three chunks and a bit, so ranges cross chunk boundaries.
	data := pseudoRandom(3*defaultChunk+1234, 1)
	if _, err := e.tgt.Put(ctx, "r.bin", bytes.NewReader(data), int64(len(data)), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	size := int64(len(data))
	tests := []struct {
		name      string
		rng       string
		status    int
		from, to  int64 // half-open
		contRange string
	}{
		{"no range", "", 200, 0, size, ""},
		{"first byte", "bytes=0-0", 206, 0, 1, "bytes 0-0/" + itoa(size)},
		{"across chunks", "bytes=1000-2100000", 206, 1000, 2100001, "bytes 1000-2100000/" + itoa(size)},
		{"open end", "bytes=3145000-", 206, 3145000, size, "bytes 3145000-" + itoa(size-1) + "/" + itoa(size)},
		{"suffix", "bytes=-100", 206, size - 100, size, "bytes " + itoa(size-100) + "-" + itoa(size-1) + "/" + itoa(size)},
		{"end past size", "bytes=10-99999999", 206, 10, size, "bytes 10-" + itoa(size-1) + "/" + itoa(size)},
		{"multiple ranges ignored", "bytes=0-1,5-6", 200, 0, size, ""},
		{"malformed ignored", "bytes=x-y", 200, 0, size, ""},
		{"start past end", "bytes=99999999-", 416, 0, 0, "bytes */" + itoa(size)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", e.s.URL()+e.path+"/fs/file?path=r.bin", nil)
			req.Header.Set("Authorization", "Bearer "+e.s.AdminToken())
			if tc.rng != "" {
				req.Header.Set("Range", tc.rng)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Range") != tc.contRange {
				t.Fatalf("status %d Content-Range %q, want %d %q", resp.StatusCode, resp.Header.Get("Content-Range"), tc.status, tc.contRange)
			}
			if tc.status == 416 {
				if code, reason := errorCode(t, body); code != wire.CodeInvalidArgument || reason != "range_not_satisfiable" {
					t.Fatalf("416 body %s", body)
				}
				return
			}
			if !bytes.Equal(body, data[tc.from:tc.to]) {
				t.Fatalf("got %d bytes, want bytes [%d,%d)", len(body), tc.from, tc.to)
			}
			if resp.Header.Get("Content-Type") != "application/octet-stream" || resp.ContentLength != tc.to-tc.from {
				t.Fatalf("headers %v", resp.Header)
			}
		})
	}
	t.Run("sdk range", func(t *testing.T) {
		f, err := e.tgt.GetRange(ctx, "r.bin", 5, 10)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(f.Body)
		f.Body.Close()
		if !bytes.Equal(got, data[5:15]) || f.Total != size {
			t.Fatalf("got %d bytes, total %d", len(got), f.Total)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
