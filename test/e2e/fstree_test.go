package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
)

// TestFsTreeOverBinary: fs put -r sends a local tree to the agent and fs
// get -r brings it back, files, modes and symlinks intact.
func TestFsTreeOverBinary(t *testing.T) {
	e := newAgentEnv(t)
	src := t.TempDir()
	for i := range 40 {
		name := filepath.Join(src, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%d.txt", i))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(strings.Repeat("z", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d1/f1.txt", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	var res client.UnpackResult
	if err := json.Unmarshal([]byte(e.cli(t, nil, "fs", "put", "-r", "--json", src, "up/tree")), &res); err != nil || res.Files != 41 || res.Dirs != 4 || res.Links != 1 {
		t.Fatalf("put -r: %+v, %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(e.root, "up", "tree", "d3", "f39.txt")); err != nil || len(b) != 39 {
		t.Fatalf("remote d3/f39.txt: %d bytes, %v", len(b), err)
	}
	back := filepath.Join(t.TempDir(), "back")
	out := e.cli(t, nil, "fs", "get", "-r", "up/tree", back)
	if !strings.Contains(out, "41 files") {
		t.Errorf("get -r said %q", out)
	}
	if fi, err := os.Stat(filepath.Join(back, "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode: %v, %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(back, "link")); err != nil || l != "d1/f1.txt" {
		t.Errorf("link -> %q, %v", l, err)
	}
	if b, err := os.ReadFile(filepath.Join(back, "d2", "f38.txt")); err != nil || len(b) != 38 {
		t.Errorf("back d2/f38.txt: %d bytes, %v", len(b), err)
	}
	if _, errOut, err := e.cliErr(nil, "fs", "get", "-r", "nope", filepath.Join(t.TempDir(), "x")); exitCode(t, err) != 1 || !strings.Contains(errOut, "not_found") {
		t.Errorf("get -r of a missing tree: %v, %q", err, errOut)
	}
}

// TestFsSearchFindOverBinary: fs search prints PATH:LINE:COL:TEXT and skips
// what .gitignore excludes; fs find prints paths matching the glob.
func TestFsSearchFindOverBinary(t *testing.T) {
	e := newAgentEnv(t)
	for name, content := range map[string]string{
		".gitignore":   "gen/\n",
		"a/one.go":     "package a\n\nfunc One() {} // marker\n",
		"a/two.txt":    "no\nmarker here\n",
		"gen/three.go": "// marker generated\n",
	} {
		p := filepath.Join(e.root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out := e.cli(t, nil, "fs", "search", "marker"); out != "a/one.go:3:18:func One() {} // marker\na/two.txt:2:1:marker here\n" {
		t.Errorf("fs search:\n%s", out)
	}
	if out := e.cli(t, nil, "fs", "search", "-e", "--glob", "*.go", `^func \w+`); out != "a/one.go:3:1:func One() {} // marker\n" {
		t.Errorf("fs search -e --glob:\n%s", out)
	}
	if out := e.cli(t, nil, "fs", "find", "*.go"); out != "a/one.go\ngen/three.go\n" {
		t.Errorf("fs find:\n%s", out)
	}
	if _, errOut, err := e.cliErr(nil, "fs", "search", "-e", "("); exitCode(t, err) != 1 || !strings.Contains(errOut, "invalid_argument") {
		t.Errorf("bad regex: %v, %q", err, errOut)
	}
}
