package files

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A restore with delete that removes what the manifest lacks from a
// directory leaves that directory with the manifest's mode and time (the
// removal comes first), in nested directories too, and the walk's stats
// (taken after the removals) see every directory that changed.
func TestRestoreDeleteKeepsDirectoryTimes(t *testing.T) {
	srcDir, dstDir := t.TempDir(), t.TempDir()
	for _, d := range []string{"a", "a/b", "c"} {
		must(t, os.MkdirAll(filepath.Join(srcDir, d), 0o755))
		must(t, os.MkdirAll(filepath.Join(dstDir, d), 0o755))
	}
	for _, f := range []string{"a/one", "a/b/two", "c/three"} {
		must(t, os.WriteFile(filepath.Join(srcDir, f), []byte(f), 0o644))
		must(t, os.WriteFile(filepath.Join(dstDir, f), []byte(f), 0o644))
	}
	// On the target: extras in a and a/b, and a directory of its own
	// under c (removed whole).
	must(t, os.WriteFile(filepath.Join(dstDir, "a/extra"), []byte("x"), 0o644))
	must(t, os.WriteFile(filepath.Join(dstDir, "a/b/extra"), []byte("x"), 0o644))
	must(t, os.MkdirAll(filepath.Join(dstDir, "c/gone/deeper"), 0o755))
	must(t, os.Chmod(filepath.Join(srcDir, "a/b"), 0o700))
	past := time.Date(2024, 3, 4, 5, 6, 7, 0, time.UTC)
	for i, d := range []string{"a", "a/b", "c"} {
		mt := past.Add(time.Duration(i) * time.Hour)
		must(t, os.Chtimes(filepath.Join(srcDir, d), mt, mt))
	}
	src, dst := newFS(t, srcDir), newFS(t, dstDir)
	s, err := src.Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	res, sent := restoreFrom(t, s, dst, RestoreOptions{Delete: true, Survey: dst.StartSurvey(".")})
	if res.Removed != 3 || res.Written != 0 || sent != 0 {
		t.Fatalf("restore: %+v, sent %d; want 3 removed, nothing written", res, sent)
	}
	for _, d := range []string{"a", "a/b", "c"} {
		want, err := os.Lstat(filepath.Join(srcDir, d))
		must(t, err)
		got, err := os.Lstat(filepath.Join(dstDir, d))
		must(t, err)
		if !got.ModTime().Equal(want.ModTime()) || got.Mode() != want.Mode() {
			t.Errorf("%s: %v %v after the restore, want %v %v", d, got.Mode(), got.ModTime(), want.Mode(), want.ModTime())
		}
	}
	for _, gone := range []string{"a/extra", "a/b/extra", "c/gone"} {
		if _, err := os.Lstat(filepath.Join(dstDir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s still there after a restore with delete (%v)", gone, err)
		}
	}
}
