package files

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
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

// A restore with delete whose survey listed the target's tree removes
// what the manifest lacks without reading any of those directories again
// at its commit (the listings are the survey's, and the plan's for the
// directories it made and wrote files in); a directory the restore made
// in place of a file and listed nowhere before is read there. An extra
// the survey listed and someone else removed before the commit is not
// counted as removed; one made after the survey stays. Listings older
// than maxListingAge at the commit are not used: every directory is read
// again, and the late extra goes too.
func TestRestoreDeleteWalksTheSurvey(t *testing.T) {
	for _, stale := range []bool{false, true} {
		t.Run(map[bool]string{false: "fresh", true: "stale"}[stale], func(t *testing.T) {
			if stale {
				staleListings(t)
			}
			testRestoreDeleteWalk(t, stale)
		})
	}
}

func testRestoreDeleteWalk(t *testing.T, stale bool) {
	srcDir, dstDir := t.TempDir(), t.TempDir()
	for _, d := range []string{"a", "a/b", "c", "new/sub"} {
		must(t, os.MkdirAll(filepath.Join(srcDir, d), 0o755))
	}
	for _, d := range []string{"a", "a/b", "c"} {
		must(t, os.MkdirAll(filepath.Join(dstDir, d), 0o755))
	}
	for _, f := range []string{"a/one", "a/b/two", "c/three", "new/sub/four"} {
		must(t, os.WriteFile(filepath.Join(srcDir, f), []byte(f), 0o644))
	}
	for _, f := range []string{"a/one", "a/b/two", "c/three"} {
		must(t, os.WriteFile(filepath.Join(dstDir, f), []byte(f), 0o644))
	}
	// new is a directory of the manifest (holding only a directory)
	// and a file on the target.
	for _, f := range []string{"a/extra", "a/b/extra", "c/vanishes", "top-extra", "new"} {
		must(t, os.WriteFile(filepath.Join(dstDir, f), []byte("x"), 0o644))
	}
	must(t, os.MkdirAll(filepath.Join(dstDir, "c/gone/deeper"), 0o755))
	r := surveyedRestore(t, srcDir, dstDir)
	ctx := context.Background()
	// Removed by someone else after the survey listed it; made after.
	must(t, os.Remove(filepath.Join(dstDir, "c/vanishes")))
	must(t, os.WriteFile(filepath.Join(dstDir, "a/late"), []byte("x"), 0o644))
	var mu sync.Mutex
	var read []string
	listHook = func(c string) {
		mu.Lock()
		read = append(read, c)
		mu.Unlock()
	}
	t.Cleanup(func() { listHook = nil })
	res, err := r.Commit(ctx)
	listHook = nil
	must(t, err)
	gone := []string{"a/extra", "a/b/extra", "c/gone", "top-extra"}
	if stale {
		gone = append(gone, "a/late")
		slices.Sort(read)
		if want := []string{".", "a", "a/b", "c", "new", "new/sub"}; !slices.Equal(read, want) {
			t.Errorf("the commit read directories %q, want all of them, %q (the listings are too old)", read, want)
		}
	} else {
		if len(read) != 1 || read[0] != "new" {
			t.Errorf("the commit read directories %q, want only new (a directory the restore made in place of a file; the survey and the plan listed the rest)", read)
		}
		if _, err := os.Lstat(filepath.Join(dstDir, "a/late")); err != nil {
			t.Errorf("a/late, made after the survey, is gone (%v): the commit went by a listing made after it", err)
		}
	}
	if res.Removed != len(gone) || res.Written != 1 {
		t.Errorf("restore: %+v; want %d removed (%q), 1 written", res, len(gone), gone)
	}
	for _, g := range gone {
		if _, err := os.Lstat(filepath.Join(dstDir, g)); !os.IsNotExist(err) {
			t.Errorf("%s still there after a restore with delete (%v)", g, err)
		}
	}
	if !stale {
		must(t, os.Remove(filepath.Join(dstDir, "a/late")))
	}
	if got, want := digest(t, dstDir), digest(t, srcDir); !maps.Equal(got, want) {
		t.Errorf("target after the restore:\n%v\nwant\n%v", got, want)
	}
}

// surveyedRestore begins a restore with delete of srcDir's tree into
// dstDir, as a carry's: its survey of dstDir is done before the plan.
// Every chunk the restore lacks is delivered; it is left to commit.
func surveyedRestore(t *testing.T, srcDir, dstDir string) *Restore {
	t.Helper()
	src, dst := newFS(t, srcDir), newFS(t, dstDir)
	ctx := context.Background()
	s, err := src.Scan(ctx, ".", ScanOptions{})
	must(t, err)
	sv := dst.StartSurvey(".")
	<-sv.done
	r, err := dst.BeginRestore(ctx, ".", s.Entries, RestoreOptions{Delete: true, Survey: sv})
	must(t, err)
	putEach(t, r, s, r.Lack())
	return r
}

// staleListings makes every listing too old for a commit's delete walk
// (maxListingAge 0) until t ends.
func staleListings(t *testing.T) {
	old := maxListingAge
	maxListingAge = 0
	t.Cleanup(func() { maxListingAge = old })
}
