package files

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

// chunksOf scans dir's FS and returns the chunks its scan gives file p.
func chunksOf(t *testing.T, f *FS, p string) []Chunk {
	t.Helper()
	s, err := f.Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	for _, e := range s.Entries {
		if e.Path == p {
			return e.Chunks
		}
	}
	t.Fatalf("%s not in the scan", p)
	return nil
}

// contentChunks is what a file holding b is made of.
func contentChunks(b []byte) []Chunk {
	if len(b) == 0 {
		return nil
	}
	// The files of this test are under the chunker's minimum: one chunk.
	return []Chunk{{Sum: sha256.Sum256(b), Size: uint32(len(b))}}
}

// The chunk cache trusts a file by its size, modification time and
// inode, as rsync's quick check trusts size and time: a file whose size,
// time or inode changed is read again; one rewritten in place with the
// same size and its old time set back is not (documented in
// docs/snapshots.md and wire/PROTOCOL.md as the same limit as rsync's).
func TestScanCacheRehashesChangedStat(t *testing.T) {
	dir := t.TempDir()
	f := newFS(t, dir)
	p := filepath.Join(dir, "f.txt")
	old := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	write := func(b []byte, mt time.Time) {
		t.Helper()
		must(t, os.WriteFile(p, b, 0o644))
		must(t, os.Chtimes(p, mt, mt))
	}
	v1 := []byte("version one of the file\n")
	write(v1, old)
	if got := chunksOf(t, f, "f.txt"); !slices.Equal(got, contentChunks(v1)) {
		t.Fatalf("first scan: %v", got)
	}

	// A new size: read again.
	v2 := []byte("version two, which is longer than the first\n")
	write(v2, old)
	if got := chunksOf(t, f, "f.txt"); !slices.Equal(got, contentChunks(v2)) {
		t.Fatalf("after a size change, the scan kept %v; want the new content's %v", got, contentChunks(v2))
	}

	// The same size, a new time: read again.
	same := func(c byte) []byte { b := slices.Clone(v2); b[0] = c; return b }
	v3 := same('3')
	write(v3, old.Add(time.Second))
	if got := chunksOf(t, f, "f.txt"); !slices.Equal(got, contentChunks(v3)) {
		t.Fatalf("after a time change, the scan kept %v", got)
	}

	// Replaced by another file (a new inode) with the same size and
	// time: read again.
	if runtime.GOOS != "windows" {
		v4 := same('4')
		tmp := filepath.Join(dir, "new")
		must(t, os.WriteFile(tmp, v4, 0o644))
		mt := old.Add(time.Second)
		must(t, os.Chtimes(tmp, mt, mt))
		must(t, os.Rename(tmp, p))
		if got := chunksOf(t, f, "f.txt"); !slices.Equal(got, contentChunks(v4)) {
			t.Fatalf("after the file was replaced (new inode, same size and time), the scan kept %v", got)
		}
		v3 = v4
	}

	// Rewritten in place, same size, its time set back: the cache is
	// trusted and the old chunks stay (rsync's quick check is fooled the
	// same way). A snapshot of it names the old content.
	v5 := same('5')
	fi, err := os.Stat(p)
	must(t, err)
	must(t, os.WriteFile(p, v5, 0o644))
	must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	if got := chunksOf(t, f, "f.txt"); !slices.Equal(got, contentChunks(v3)) {
		t.Fatalf("same size, time and inode: the scan gave %v, want the cached %v", got, contentChunks(v3))
	}
}

// A restore's plan uses the same cache for what the receiving side has: a
// file there changed in size or time since it was last seen is read
// again, so the restore writes what the manifest says.
func TestRestorePlanRehashesChangedFile(t *testing.T) {
	srcDir, dstDir := t.TempDir(), t.TempDir()
	writeTree(t, srcDir)
	src, dst := newFS(t, srcDir), newFS(t, dstDir)
	s, err := src.Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	restoreFrom(t, s, dst, RestoreOptions{Delete: true})
	// dst's cache knows run.sh now. Change it there behind the cache's
	// back, in size: the next restore of the same manifest puts it back.
	p := filepath.Join(dstDir, "run.sh")
	must(t, os.WriteFile(p, []byte("#!/bin/sh\necho changed on the receiving side\n"), 0o755))
	res, sent := restoreFrom(t, s, dst, RestoreOptions{Delete: true})
	if res.Written != 1 || sent == 0 {
		t.Fatalf("restore after a change on the receiving side: %+v, sent %d; want run.sh written", res, sent)
	}
	if b, _ := os.ReadFile(p); string(b) != "#!/bin/sh\necho hi\n" {
		t.Fatalf("run.sh after the restore: %q", b)
	}
}

// A survey stops at surveyMaxEntries; a restore with it still makes the
// whole tree (the plan lists what the survey did not reach).
func TestSurveyBounded(t *testing.T) {
	defer func(n int) { surveyMaxEntries = n }(surveyMaxEntries)
	surveyMaxEntries = 3
	srcDir, dstDir := t.TempDir(), t.TempDir()
	writeTree(t, srcDir)
	for _, d := range []string{"a", "b", "c"} {
		must(t, os.MkdirAll(filepath.Join(dstDir, "junk", d), 0o755))
		must(t, os.WriteFile(filepath.Join(dstDir, "junk", d, "f"), []byte(d), 0o644))
	}
	src, dst := newFS(t, srcDir), newFS(t, dstDir)
	s, err := src.Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	sv := dst.StartSurvey(".")
	<-sv.done
	listed := 0
	for _, l := range sv.listed {
		listed += len(l)
	}
	if listed > 3 || sv.n <= 3 {
		t.Fatalf("the survey kept %d entries of %d seen, want at most 3 kept", listed, sv.n)
	}
	if res, sent := restoreFrom(t, s, dst, RestoreOptions{Delete: true, Survey: sv}); res.Written == 0 || sent != s.Bytes {
		t.Fatalf("restore with a bounded survey: %+v, sent %d of %d", res, sent, s.Bytes)
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
}

// A restore with a survey (the receiving side listed while the manifest
// came, as a carry does) makes the same tree as one without; the survey
// ends with Stop.
func TestRestoreWithSurvey(t *testing.T) {
	srcDir, dstDir := t.TempDir(), t.TempDir()
	writeTree(t, srcDir)
	src, dst := newFS(t, srcDir), newFS(t, dstDir)
	// The receiving side has stale files, a file where the manifest has
	// a directory and a directory where it has a file.
	must(t, os.WriteFile(filepath.Join(dstDir, "stale"), []byte("x"), 0o644))
	must(t, os.WriteFile(filepath.Join(dstDir, "src"), []byte("in the way"), 0o644))
	must(t, os.MkdirAll(filepath.Join(dstDir, "run.sh", "sub"), 0o755))
	s, err := src.Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	sv := dst.StartSurvey(".")
	<-sv.done // a carry's survey is done by the time its manifest is
	if len(sv.listed) != 3 {
		t.Fatalf("the survey listed %d directories, want 3 (., run.sh, run.sh/sub)", len(sv.listed))
	}
	res, sent := restoreFrom(t, s, dst, RestoreOptions{Delete: true, Survey: sv})
	sv.Stop()
	sv.Stop() // a second Stop is harmless
	if res.Written != 4 || res.Removed != 1 || sent != s.Bytes {
		t.Fatalf("restore with a survey: %+v, sent %d of %d", res, sent, s.Bytes)
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
	// Again with a survey, nothing changed: nothing sent or written.
	sv = dst.StartSurvey(".")
	<-sv.done
	res, sent = restoreFrom(t, s, dst, RestoreOptions{Delete: true, Survey: sv})
	sv.Stop()
	if res.Written != 0 || sent != 0 {
		t.Fatalf("no-op restore with a survey: %+v, sent %d", res, sent)
	}
	// A survey of another directory is not used, and one stopped
	// before it listed anything leaves the plan to list for itself.
	other := dst.StartSurvey("src")
	other.Stop()
	res, _ = restoreFrom(t, s, dst, RestoreOptions{Delete: true, Survey: other})
	if res.Written != 0 {
		t.Fatalf("restore with a stopped survey of another directory: %+v", res)
	}
}
