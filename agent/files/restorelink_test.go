package files

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A directory of the manifest that a process on the target replaces with
// a symlink between the restore's plan and its commit is never walked
// through by the commit's delete: the extra the directory held is not
// removed from the directory the link points to, where the manifest has
// a file of that name (inside the root), nor from one outside the root.
// Whether the walk goes by the survey's listings or reads directories
// again (stale listings), the commit refuses the link.
func TestRestoreDeleteRefusesDirectoryReplacedBySymlink(t *testing.T) {
	for _, stale := range []bool{false, true} {
		for _, inside := range []bool{true, false} {
			name := map[bool]string{false: "fresh", true: "stale"}[stale] + "/" + map[bool]string{false: "outside", true: "inside"}[inside]
			t.Run(name, func(t *testing.T) {
				if stale {
					staleListings(t)
				}
				testRestoreDeleteLinkedDir(t, inside)
			})
		}
	}
}

func testRestoreDeleteLinkedDir(t *testing.T, inside bool) {
	srcDir, dstDir, outDir, awayDir := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{"a", "b"} {
		must(t, os.MkdirAll(filepath.Join(srcDir, d), 0o755))
		must(t, os.MkdirAll(filepath.Join(dstDir, d), 0o755))
	}
	for _, f := range []string{"a/one", "b/x"} {
		must(t, os.WriteFile(filepath.Join(srcDir, f), []byte(f), 0o644))
		must(t, os.WriteFile(filepath.Join(dstDir, f), []byte(f), 0o644))
	}
	// a/x is an extra on the target: the manifest has b/x, not a/x.
	must(t, os.WriteFile(filepath.Join(dstDir, "a/x"), []byte("extra"), 0o644))
	must(t, os.WriteFile(filepath.Join(outDir, "x"), []byte("outside"), 0o644))
	r := surveyedRestore(t, srcDir, dstDir)
	ctx := context.Background()
	// A process on the target moves directory a out of the root and
	// puts a link in its place.
	target := "b"
	if !inside {
		target = outDir
	}
	must(t, os.Rename(filepath.Join(dstDir, "a"), filepath.Join(awayDir, "a")))
	must(t, os.Symlink(target, filepath.Join(dstDir, "a")))
	res, err := r.Commit(ctx)
	t.Logf("commit: %+v, %v", res, err)
	if got, err := os.ReadFile(filepath.Join(dstDir, "b/x")); err != nil || string(got) != "b/x" {
		t.Errorf("b/x, a file of the manifest, after the commit: %q, %v; the delete walked through the link a -> %s", got, err, target)
	}
	if got, err := os.ReadFile(filepath.Join(outDir, "x")); err != nil || string(got) != "outside" {
		t.Errorf("a file outside the root after the commit: %q, %v", got, err)
	}
	if got, err := os.ReadFile(filepath.Join(awayDir, "a/x")); err != nil || string(got) != "extra" {
		t.Errorf("a/x, moved out of the root with its directory, after the commit: %q, %v", got, err)
	}
	if err == nil {
		t.Errorf("the commit succeeded with a, a directory of the manifest, a link to %s", target)
	}
}
