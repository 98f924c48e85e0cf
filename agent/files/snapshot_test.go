package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	iofs "io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree makes a tree with small and large files, modes and links.
func writeTree(t *testing.T, dir string) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	must(t, os.MkdirAll(filepath.Join(dir, "src/deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "src/a.txt"), []byte("hello\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "src/deep/big.bin"), big, 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644))
	must(t, os.Symlink("src/a.txt", filepath.Join(dir, "link")))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// restoreFrom restores scan s onto fs at p with chunks read from s, and
// returns the bytes delivered.
func restoreFrom(t *testing.T, s *Scan, dst *FS, opts RestoreOptions) (RestoreResult, int64) {
	t.Helper()
	ctx := context.Background()
	r, err := dst.BeginRestore(ctx, ".", s.Entries, opts)
	if err != nil {
		t.Fatal(err)
	}
	var sent int64
	for _, sum := range r.Lack() {
		data, err := s.AppendChunk(nil, sum)
		if err != nil {
			t.Fatal(err)
		}
		sent += int64(len(data))
		must(t, r.Put(sum, data))
	}
	res, err := r.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res, sent
}

// digest describes a tree: path → type, mode, sha256 or link target.
func digest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		must(t, err)
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "link " + l
		case fi.IsDir():
			out[rel] = "dir " + fi.Mode().Perm().String()
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fmt.Sprintf("%v %x %v", fi.Mode().Perm(), sha256.Sum256(b), fi.ModTime().UTC())
		}
		return nil
	})
	return out
}

func newFS(t *testing.T, dir string) *FS {
	t.Helper()
	f, err := New(dir)
	must(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func TestSnapshotRoundTripAndIncremental(t *testing.T) {
	srcDir, dstDir := t.TempDir(), t.TempDir()
	writeTree(t, srcDir)
	src, dst := newFS(t, srcDir), newFS(t, dstDir)
	must(t, os.WriteFile(filepath.Join(dstDir, "stale"), []byte("x"), 0o644))
	s, err := src.Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	res, sent := restoreFrom(t, s, dst, RestoreOptions{Delete: true})
	if res.Files != 4 || res.Written != 4 || res.Removed != 1 || sent != s.Bytes {
		t.Fatalf("first restore: %+v, sent %d of %d bytes", res, sent, s.Bytes)
	}
	want, got := digest(t, srcDir), digest(t, dstDir)
	if len(want) != len(got) {
		t.Fatalf("trees differ:\n%v\n%v", want, got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	// Change the middle of the big file: only a chunk or two is sent.
	big := filepath.Join(srcDir, "src/deep/big.bin")
	f, err := os.OpenFile(big, os.O_WRONLY, 0)
	must(t, err)
	f.WriteAt([]byte("a small change"), 1<<20)
	f.Close()
	s, err = src.Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	res, sent = restoreFrom(t, s, dst, RestoreOptions{})
	if res.Written != 1 || sent == 0 || sent > 3*256<<10 {
		t.Fatalf("incremental restore: %+v, sent %d bytes", res, sent)
	}
	b1, _ := os.ReadFile(big)
	b2, _ := os.ReadFile(filepath.Join(dstDir, "src/deep/big.bin"))
	if !bytes.Equal(b1, b2) {
		t.Fatal("big file differs after the incremental restore")
	}
	// Nothing changed: nothing to send, nothing written.
	res, sent = restoreFrom(t, s, dst, RestoreOptions{})
	if res.Written != 0 || sent != 0 {
		t.Fatalf("no-op restore: %+v, sent %d", res, sent)
	}
}

func TestScanExcludes(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir)
	must(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.bin\n"), 0o644))
	fs := newFS(t, dir)
	s, err := fs.Scan(context.Background(), ".", ScanOptions{Exclude: []string{"run.sh"}, Gitignore: true})
	must(t, err)
	for _, e := range s.Entries {
		if e.Path == "run.sh" || e.Path == "src/deep/big.bin" {
			t.Errorf("%s was not excluded", e.Path)
		}
	}
}

func TestRestoreRefusesHostileManifests(t *testing.T) {
	file := func(p string) SnapEntry { return SnapEntry{Path: p, Type: TypeFile, Mode: 0o644} }
	dir := func(p string) SnapEntry { return SnapEntry{Path: p, Type: TypeDir, Mode: 0o755} }
	tests := []struct {
		name    string
		entries []SnapEntry
		kind    error
	}{
		{"dot dot", []SnapEntry{file("../escape")}, ErrUnsafeEntry},
		{"absolute", []SnapEntry{file("/etc/passwd")}, ErrUnsafeEntry},
		{"unclean", []SnapEntry{dir("a"), file("a/../b")}, ErrUnsafeEntry},
		{"link out", []SnapEntry{{Path: "l", Type: TypeSymlink, Link: "../../etc"}}, ErrUnsafeEntry},
		{"absolute link", []SnapEntry{{Path: "l", Type: TypeSymlink, Link: "/etc"}}, ErrUnsafeEntry},
		{"symlink then write", []SnapEntry{{Path: "l", Type: TypeSymlink, Link: "d"}, dir("d"), file("l/x")}, ErrUnsafeEntry},
		{"parent missing", []SnapEntry{file("d/x")}, ErrUnsafeEntry},
		{"twice", []SnapEntry{file("x"), file("X")}, ErrUnsafeEntry},
		{"temp name", []SnapEntry{file(TempPrefix + "x")}, iofs.ErrInvalid},
		{"size lies", []SnapEntry{{Path: "x", Type: TypeFile, Size: 5}}, iofs.ErrInvalid},
		{"fifo", []SnapEntry{{Path: "x", Type: TypeOther}}, ErrUnsupportedEntry},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			fs := newFS(t, d)
			_, err := fs.BeginRestore(context.Background(), ".", tc.entries, RestoreOptions{})
			if !errors.Is(err, tc.kind) {
				t.Fatalf("got %v, want %v", err, tc.kind)
			}
			if es, _ := os.ReadDir(d); len(es) != 0 {
				t.Fatalf("a refused restore wrote %v", es)
			}
		})
	}
}

// TestRestoreRefusesParentTurnedSymlink: a directory of the restore
// replaced by a symlink after BeginRestore made it is refused when a file
// is written there, wherever the link points (inside the root or out);
// nothing is written through it.
func TestRestoreRefusesParentTurnedSymlink(t *testing.T) {
	for _, where := range []string{"inside", "outside"} {
		t.Run(where, func(t *testing.T) {
			srcDir, dstDir, outDir := t.TempDir(), t.TempDir(), t.TempDir()
			must(t, os.MkdirAll(filepath.Join(srcDir, "a/d"), 0o755))
			must(t, os.WriteFile(filepath.Join(srcDir, "a/d/f"), []byte("content"), 0o644))
			s, err := newFS(t, srcDir).Scan(context.Background(), ".", ScanOptions{})
			must(t, err)
			dst := newFS(t, dstDir)
			ctx := context.Background()
			r, err := dst.BeginRestore(ctx, ".", s.Entries, RestoreOptions{})
			must(t, err)
			defer r.Abort()
			target, link := outDir, outDir
			if where == "inside" {
				target, link = filepath.Join(dstDir, "other"), "other"
				must(t, os.Mkdir(target, 0o755))
			}
			// The file's parent's parent, so that the link is not the
			// last component of the directory opened.
			must(t, os.RemoveAll(filepath.Join(dstDir, "a")))
			must(t, os.Symlink(link, filepath.Join(dstDir, "a")))
			must(t, os.Mkdir(filepath.Join(target, "d"), 0o755))
			var putErr error
			for _, sum := range r.Lack() {
				data, err := s.AppendChunk(nil, sum)
				must(t, err)
				if putErr = r.Put(sum, data); putErr != nil {
					break
				}
			}
			if putErr == nil {
				_, putErr = r.Commit(ctx)
			}
			if !errors.Is(putErr, ErrUnsafeEntry) {
				t.Fatalf("restore under a symlinked parent: %v, want %v", putErr, ErrUnsafeEntry)
			}
			if es, _ := os.ReadDir(filepath.Join(target, "d")); len(es) != 0 {
				t.Fatalf("the restore wrote through the symlink: %v", es)
			}
		})
	}
}

// FuzzRestoreManifest restores manifests made of fuzzed lines ("TYPE PATH
// [LINK]") into dest: whatever they say, nothing outside dest changes and
// no temporary file is left.
func FuzzRestoreManifest(f *testing.F) {
	for _, s := range []string{
		"d a\nf a/x",
		"f ../x",
		"f /abs",
		"l l .\nf l/x",
		"d d\nl d/l ../..",
		"l l ../../outside\nd l\nf l/secret.txt",
		"d dir\nf dir/b.txt",
		"f a.txt\nf A.TXT",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		fx := newFixture(t)
		dest := filepath.Join(fx.root, "dest")
		must(t, os.Mkdir(dest, 0o755))
		var entries []SnapEntry
		for _, line := range strings.Split(spec, "\n") {
			fields := strings.Fields(line)
			if len(fields) < 2 || len(entries) > 20 {
				continue
			}
			e := SnapEntry{Path: fields[1], Mode: 0o644}
			switch fields[0] {
			case "d":
				e.Type, e.Mode = TypeDir, 0o755
			case "l":
				e.Type = TypeSymlink
				if len(fields) > 2 {
					e.Link = fields[2]
				}
			default:
				e.Type = TypeFile
			}
			entries = append(entries, e)
		}
		before := snapshot(t, fx.base, dest)
		r, err := fx.fs.BeginRestore(context.Background(), "dest", entries, RestoreOptions{Delete: true})
		if err == nil {
			_, err = r.Commit(context.Background())
		}
		if err != nil && kindOf(err) == "no kind" {
			t.Errorf("error of no kind: %v", err)
		}
		after := snapshot(t, fx.base, dest)
		delete(after, dest)
		delete(before, dest)
		if d := diffSnapshots(before, after); len(d) > 0 {
			t.Errorf("outside dest changed: %v", d)
		}
		if tf := tempFiles(t, fx.base); len(tf) > 0 {
			t.Errorf("temporary files left: %v", tf)
		}
	})
}

// Paths the owner's policy hides are left out of a scan, refused by a
// restore before anything is written, and never deleted.
func TestSnapshotHiddenPaths(t *testing.T) {
	srcDir, dstDir := t.TempDir(), t.TempDir()
	writeTree(t, srcDir)
	must(t, os.WriteFile(filepath.Join(srcDir, ".env"), []byte("SECRET=1"), 0o600))
	must(t, os.WriteFile(filepath.Join(dstDir, ".env"), []byte("SECRET=2"), 0o600))
	src, dst := newFS(t, srcDir), newFS(t, dstDir)
	hide := func(c string) bool { return c == ".env" }
	src.SetHidden(hide)
	dst.SetHidden(hide)
	s, err := src.Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	for _, e := range s.Entries {
		if e.Path == ".env" {
			t.Fatal("a hidden path was scanned")
		}
	}
	restoreFrom(t, s, dst, RestoreOptions{Delete: true})
	if b, err := os.ReadFile(filepath.Join(dstDir, ".env")); err != nil || string(b) != "SECRET=2" {
		t.Fatalf("a hidden path was touched by a restore with delete: %q, %v", b, err)
	}
	entries := append(s.Entries, SnapEntry{Path: ".env", Type: TypeFile, Mode: 0o600})
	if _, err := dst.BeginRestore(context.Background(), ".", entries, RestoreOptions{}); !errors.Is(err, ErrDenied) {
		t.Fatalf("a manifest naming a hidden path: %v, want ErrDenied", err)
	}
}

// TestRestoreManyDirectories restores a tree of more directories than a
// restore keeps open (maxIdleDirs): every file lands, and no directory
// stays open after Commit.
func TestRestoreManyDirectories(t *testing.T) {
	srcDir, dstDir := t.TempDir(), t.TempDir()
	for i := range maxIdleDirs + 150 {
		d := filepath.Join(srcDir, "top", fmt.Sprintf("d%03d", i))
		must(t, os.MkdirAll(d, 0o755))
		for j := range 2 {
			must(t, os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", j)), []byte(fmt.Sprintf("file %d %d\n", i, j)), 0o644))
		}
	}
	s, err := newFS(t, srcDir).Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	dst := newFS(t, dstDir)
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return -1 // not Linux: not counted
		}
		return len(es)
	}
	before := fds()
	res, _ := restoreFrom(t, s, dst, RestoreOptions{})
	if res.Written != 2*(maxIdleDirs+150) {
		t.Fatalf("wrote %d files, want %d", res.Written, 2*(maxIdleDirs+150))
	}
	if after := fds(); after > before {
		t.Fatalf("%d files open after the restore, %d before", after, before)
	}
	want, got := digest(t, srcDir), digest(t, dstDir)
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: got %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries restored, want %d", len(got), len(want))
	}
}

// TestRestoreIntoLinkedDirectory: the directory a restore is asked for is
// resolved as any path a call names, through a symlink that stays inside
// the root; only the manifest's own directories must be directories.
func TestRestoreIntoLinkedDirectory(t *testing.T) {
	srcDir, dstDir := t.TempDir(), t.TempDir()
	writeTree(t, srcDir)
	s, err := newFS(t, srcDir).Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	must(t, os.Mkdir(filepath.Join(dstDir, "real"), 0o755))
	must(t, os.Symlink("real", filepath.Join(dstDir, "work")))
	dst := newFS(t, dstDir)
	ctx := context.Background()
	r, err := dst.BeginRestore(ctx, "work", s.Entries, RestoreOptions{})
	must(t, err)
	putEach(t, r, s, r.Lack())
	if _, err := r.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want, got := digest(t, srcDir), digest(t, filepath.Join(dstDir, "real"))
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
}
