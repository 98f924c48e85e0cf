package controlplane

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/wire"
)

// tarOf builds a tar of entries: name → content, "->target" for a
// symlink, "=>target" for a hard link, "#size" for a header claiming size
// with no content behind it.
func tarOf(t testing.TB, entries ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		name, v := e[0], e[1]
		h := &tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(v))}
		switch {
		case strings.HasPrefix(v, "->"):
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, v[2:], 0
		case strings.HasPrefix(v, "=>"):
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, v[2:], 0
		case strings.HasPrefix(v, "#"):
			fmt.Sscan(v[1:], &h.Size)
			tw.WriteHeader(h)
			tw.Flush()
			return append(b.Bytes(), make([]byte, 4096)...)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(v))
		}
	}
	tw.Close()
	return b.Bytes()
}

// treeOf reads every file and link under dir: relative path → content or
// "->target".
func treeOf(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&iofs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "->" + l
		case d.IsDir():
			out[rel+"/"] = ""
		default:
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

func TestArchiveRoundTrip(t *testing.T) {
	e := newFilesEnv(t)
	ctx := context.Background()
	src := filepath.Join(e.root, "src")
	for i := range 300 {
		writeFile(t, filepath.Join(src, fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%03d.txt", i)), strings.Repeat("x", i), 0o644)
	}
	big := pseudoRandom(9<<20+17, 3) // several pieces and chunks
	writeFile(t, filepath.Join(src, "big.bin"), string(big), 0o600)
	if err := os.Symlink("d1/f001.txt", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	rc, err := e.tgt.GetArchive(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.tgt.PutArchive(ctx, "copy/here", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != "copy/here" || res.Files != 301 || res.Dirs != 7 || res.Links != 1 || res.Bytes != int64(len(big))+299*300/2 {
		t.Errorf("result = %+v", res)
	}
	want, got := treeOf(t, src), treeOf(t, filepath.Join(e.root, "copy", "here"))
	if len(want) != len(got) {
		t.Fatalf("copy has %d entries, source %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("copy of %s differs (%d vs %d bytes)", k, len(got[k]), len(v))
		}
	}
	if fi, err := os.Stat(filepath.Join(e.root, "copy", "here", "big.bin")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("big.bin mode: %v %v", fi, err)
	}
	// A chunked body with no length (a pipe) works too.
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeAll(pw, data)) }()
	if _, err := e.tgt.PutArchive(ctx, "piped", pr, -1); err != nil {
		t.Fatal(err)
	}
	if len(treeOf(t, filepath.Join(e.root, "piped"))) != len(want) {
		t.Errorf("piped copy incomplete")
	}
}

func writeAll(w io.Writer, b []byte) error {
	for len(b) > 0 {
		n := min(len(b), 1000)
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func TestArchiveRefusals(t *testing.T) {
	e := newFilesEnv(t)
	outside := filepath.Join(filepath.Dir(e.root), "outside")
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret", 0o644)
	if err := os.Symlink(outside, filepath.Join(e.root, "escape")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		path   string
		body   []byte
		status int
		reason string
		inside string // must not exist under the root afterwards
	}{
		{"dotdot", "dest", tarOf(t, [2]string{"../../outside/evil", "x"}), 403, wire.ReasonUnsafeArchiveEntry, ""},
		{"absolute", "dest", tarOf(t, [2]string{outside + "/evil", "x"}), 403, wire.ReasonUnsafeArchiveEntry, ""},
		{"symlink then file", "dest", tarOf(t, [2]string{"l", "->sub"}, [2]string{"l/evil", "x"}), 403, wire.ReasonUnsafeArchiveEntry, "dest/sub/evil"},
		{"symlink out", "dest", tarOf(t, [2]string{"l2", "->../../outside"}), 403, wire.ReasonUnsafeArchiveEntry, "dest/l2"},
		{"hard link out", "dest", tarOf(t, [2]string{"h", "=>../../outside/secret.txt"}), 403, wire.ReasonUnsafeArchiveEntry, "dest/h"},
		{"through an existing symlink out", ".", tarOf(t, [2]string{"escape/evil", "x"}), 403, wire.ReasonOutsideRoot, ""},
		{"dest outside", "../outside", tarOf(t, [2]string{"evil", "x"}), 403, wire.ReasonOutsideRoot, ""},
		{"bomb", "dest", tarOf(t, [2]string{"bomb", "#109951162777600"}), 413, wire.ReasonArchiveTooLarge, "dest/bomb"},
		{"fifo", "dest", func() []byte {
			var b bytes.Buffer
			tw := tar.NewWriter(&b)
			tw.WriteHeader(&tar.Header{Name: "p", Typeflag: tar.TypeFifo})
			tw.Close()
			return b.Bytes()
		}(), 400, wire.ReasonUnsupportedArchiveEntry, "dest/p"},
		{"not a tar", "dest", bytes.Repeat([]byte("garbage!"), 100), 400, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := rawCall(t, e, http.MethodPut, "/fs/archive?path="+tc.path, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if _, reason := errorCode(t, body); reason != tc.reason {
				t.Errorf("reason %q, want %q: %s", reason, tc.reason, body)
			}
			if got := treeOf(t, outside); len(got) != 1 || got["secret.txt"] != "secret" {
				t.Errorf("outside the root changed: %v", got)
			}
			if tc.inside != "" {
				if _, err := os.Lstat(filepath.Join(e.root, tc.inside)); err == nil {
					t.Errorf("%s was written", tc.inside)
				}
			}
		})
	}
	for _, tc := range []struct {
		path   string
		status int
	}{{"missing", 404}, {"../outside", 403}, {"escape", 200}} {
		status, body := rawCall(t, e, http.MethodGet, "/fs/archive?path="+tc.path, nil)
		if status != tc.status {
			t.Errorf("GET archive %s: %d, want %d: %s", tc.path, status, tc.status, body)
		}
		if tc.path == "escape" {
			// the link itself, never what it points to
			h, err := tar.NewReader(bytes.NewReader(body)).Next()
			if err != nil || h.Typeflag != tar.TypeSymlink {
				t.Errorf("GET archive of a symlink: %+v, %v", h, err)
			}
		}
	}
}

// rawCall sends body to the agent's target path and returns the status and
// response body.
func rawCall(t testing.TB, e *filesEnv, method, suffix string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, e.s.URL()+e.path+suffix, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.s.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}
