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

// noneHeld checks that the replaced files under dir are let go once the
// restores that held them ended (closed on a goroutine: waited for, 5 s
// at most).
func noneHeld(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(heldDeleted(t, dir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := heldDeleted(t, dir); len(got) > 0 {
		t.Errorf("replaced files still held after the restores ended: %q", got)
	}
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
			putEach(t, r, s, r.Lack()[:2])
			if got := heldDeleted(t, dstDir); len(got) != 2 {
				t.Fatalf("after two files were replaced, %d replaced files held (%q), want 2", len(got), got)
			}
			if tc.abort {
				r.Abort()
			} else {
				putEach(t, r, s, r.Lack()[2:])
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
			noneHeld(t, dstDir)
		})
	}
}

// The bounds on the replaced files held are the agent's, not each
// restore's: restores running at once (several sessions' carries) hold
// no more than maxHeldOld descriptors together, so they cannot take the
// agent's open files up to its limit; those a finished restore let go
// are no longer counted.
func TestRestoresHoldAtMostMaxHeldOldTogether(t *testing.T) {
	defer func(n int) { maxHeldOld = n }(maxHeldOld)
	maxHeldOld = 4
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	ctx := context.Background()
	parent := t.TempDir()
	parent, _ = filepath.EvalSymlinks(parent)
	var rs []*Restore
	for i := range 3 {
		srcDir, dstDir := t.TempDir(), filepath.Join(parent, string(rune('p'+i)))
		must(t, os.Mkdir(dstDir, 0o755))
		for _, n := range []string{"a", "b", "c"} {
			must(t, os.WriteFile(filepath.Join(srcDir, n), []byte("new "+n), 0o644))
			must(t, os.WriteFile(filepath.Join(dstDir, n), []byte("old "+n), 0o644))
		}
		src, dst := newFS(t, srcDir), newFS(t, dstDir)
		s, err := src.Scan(ctx, ".", ScanOptions{})
		must(t, err)
		r, err := dst.BeginRestore(ctx, ".", s.Entries, RestoreOptions{})
		must(t, err)
		putEach(t, r, s, r.Lack())
		rs = append(rs, r)
		if got := heldDeleted(t, parent); len(got) > maxHeldOld {
			t.Fatalf("%d restores running hold %d replaced files, want at most %d", i+1, len(got), maxHeldOld)
		}
	}
	for _, r := range rs {
		_, err := r.Commit(ctx)
		must(t, err)
	}
	noneHeld(t, parent)
	held.Lock()
	files, bytes := held.files, held.bytes
	held.Unlock()
	if files != 0 || bytes != 0 {
		t.Errorf("after the restores ended, %d replaced files (%d bytes) still counted as held", files, bytes)
	}
}
