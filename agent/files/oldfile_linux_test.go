package files

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// heldDeleted lists this process's descriptors of deleted files under
// dir (/proc/self/fd): the replaced files a restore holds.
func heldDeleted(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	var out []string
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(l, dir+"/") && strings.HasSuffix(l, " (deleted)") {
			out = append(out, l)
		}
	}
	return out
}

// A restore holds the files it renames over until it ends, so that they
// are freed after its commit rather than in each rename; then it lets
// them go (no descriptor left), after a Commit and after an Abort alike,
// and holds no more than maxHeldOld of them.
func TestRestoreHoldsReplacedFilesUntilItEnds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		abort bool
	}{{"commit", 1024, false}, {"abort", 1024, true}, {"bounded", 2, false}} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(n int) { maxHeldOld = n }(maxHeldOld)
			maxHeldOld = tc.limit
			// No collection: an os.File's finalizer would close a
			// descriptor the restore forgot.
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			srcDir, dstDir := t.TempDir(), t.TempDir()
			dstDir, _ = filepath.EvalSymlinks(dstDir)
			for _, n := range []string{"a", "b", "c", "d"} {
				must(t, os.WriteFile(filepath.Join(srcDir, n), []byte("new "+n), 0o644))
				must(t, os.WriteFile(filepath.Join(dstDir, n), []byte("old "+n), 0o644))
			}
			src, dst := newFS(t, srcDir), newFS(t, dstDir)
			ctx := context.Background()
			s, err := src.Scan(ctx, ".", ScanOptions{})
			must(t, err)
			r, err := dst.BeginRestore(ctx, ".", s.Entries, RestoreOptions{Delete: true})
			must(t, err)
			// Two files delivered: renamed into place, the old ones held.
			for _, sum := range r.Lack()[:2] {
				data, err := s.AppendChunk(nil, sum)
				must(t, err)
				must(t, r.Put(sum, data))
			}
			if got := heldDeleted(t, dstDir); len(got) != 2 {
				t.Fatalf("after two files were replaced, %d replaced files held (%q), want 2", len(got), got)
			}
			if tc.abort {
				r.Abort()
			} else {
				for _, sum := range r.Lack()[2:] {
					data, err := s.AppendChunk(nil, sum)
					must(t, err)
					must(t, r.Put(sum, data))
				}
				if got := heldDeleted(t, dstDir); len(got) != min(4, tc.limit) {
					t.Fatalf("after four files were replaced, %d replaced files held (%q), want %d", len(got), got, min(4, tc.limit))
				}
				_, err := r.Commit(ctx)
				must(t, err)
				for _, n := range []string{"a", "b", "c", "d"} {
					if b, err := os.ReadFile(filepath.Join(dstDir, n)); err != nil || string(b) != "new "+n {
						t.Errorf("%s after the commit: %q, %v", n, b, err)
					}
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for len(heldDeleted(t, dstDir)) > 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := heldDeleted(t, dstDir); len(got) > 0 {
				t.Errorf("replaced files still held after the restore ended: %q", got)
			}
		})
	}
}
