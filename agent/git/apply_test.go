package git

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestApply(t *testing.T) {
	tests := []struct {
		name    string
		patch   func(good string) string
		opts    ApplyOptions
		code    string
		want    string // a.txt afterwards
		message string // in the error
	}{
		{"applies", func(p string) string { return p }, ApplyOptions{}, "", lines("one", "2", "three"), ""},
		{"check only", func(p string) string { return p }, ApplyOptions{Check: true}, "", lines("one", "two", "three"), ""},
		{"index", func(p string) string { return p }, ApplyOptions{Index: true}, "", lines("one", "2", "three"), ""},
		{"does not apply", func(p string) string { return strings.ReplaceAll(p, "-two", "-zwei") }, ApplyOptions{},
			"patch_failed", lines("one", "two", "three"), "patch does not apply"},
		{"garbage", func(string) string { return "not a patch\n" }, ApplyOptions{}, "patch_failed", lines("one", "two", "three"), ""},
		{"empty", func(string) string { return "" }, ApplyOptions{}, "invalid", lines("one", "two", "three"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, g := newGit(t)
			dir := newRepo(t, ctx, g)
			commitFiles(t, ctx, g, dir, "init", map[string]string{"a.txt": lines("one", "two", "three")})
			writeFiles(t, dir, map[string]string{"a.txt": lines("one", "2", "three")})
			d, err := g.Diff(ctx, dir, DiffOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mustGit(t, ctx, g, dir, "checkout", "--", "a.txt")
			err = g.Apply(ctx, dir, []byte(tc.patch(d.Patch)), tc.opts)
			if kindOf(err) != tc.code || err != nil && !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("Apply = %v, want %q with %q", err, tc.code, tc.message)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(got) != tc.want {
				t.Errorf("a.txt = %q, want %q", got, tc.want)
			}
			staged := mustGit(t, ctx, g, dir, "diff", "--cached", "--name-only")
			if tc.opts.Index != (staged == "a.txt\n") {
				t.Errorf("staged = %q with Index %v", staged, tc.opts.Index)
			}
		})
	}
}

// TestApplyThreeWay applies a patch whose context moved on; the three-way
// fallback merges it.
func TestApplyThreeWay(t *testing.T) {
	ctx, g := newGit(t)
	dir := newRepo(t, ctx, g)
	base := lines("1", "2", "3", "4", "5", "6", "7", "8", "9")
	commitFiles(t, ctx, g, dir, "init", map[string]string{"a.txt": base})
	writeFiles(t, dir, map[string]string{"a.txt": strings.Replace(base, "8\n", "eight\n", 1)})
	d, err := g.Diff(ctx, dir, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustGit(t, ctx, g, dir, "checkout", "--", "a.txt")
	commitFiles(t, ctx, g, dir, "moved", map[string]string{"a.txt": strings.Replace(base, "5\n", "five\n", 1)})
	if err := g.Apply(ctx, dir, []byte(d.Patch), ApplyOptions{}); kindOf(err) != "patch_failed" {
		t.Fatalf("plain Apply = %v, want patch_failed", err)
	}
	if err := g.Apply(ctx, dir, []byte(d.Patch), ApplyOptions{ThreeWay: true}); err != nil {
		t.Fatalf("three-way Apply = %v", err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
	if !strings.Contains(string(got), "five\n6\n7\neight\n") {
		t.Errorf("a.txt = %q, want both changes", got)
	}
}

func TestApplyNotRepo(t *testing.T) {
	ctx, g := newGit(t)
	dir := t.TempDir()
	g.Ceiling = dir
	patch := "--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+x\n"
	if err := g.Apply(ctx, dir, []byte(patch), ApplyOptions{}); kindOf(err) != "not_repository" {
		t.Errorf("Apply outside a repository = %v, want not_repository", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("Apply created a file outside a repository")
	}
}

// TestApplyStaysInRepo feeds patches that name paths outside the work tree.
func TestApplyStaysInRepo(t *testing.T) {
	ctx, g := newGit(t)
	base := t.TempDir()
	dir := filepath.Join(base, "repo")
	writeFiles(t, dir, map[string]string{"a.txt": "a\n"})
	mustGit(t, ctx, g, dir, "init", "-q")
	if err := os.Symlink(base, filepath.Join(dir, "up")); err != nil {
		if runtime.GOOS == "windows" {
			t.Skipf("symlinks unavailable: %v", err)
		}
		t.Fatal(err)
	}
	abs := filepath.ToSlash(filepath.Join(base, "escaped.txt"))
	for _, target := range []string{"../escaped.txt", "up/escaped.txt", abs, "sub/../../escaped.txt"} {
		patch := "diff --git a/" + target + " b/" + target + "\nnew file mode 100644\n--- /dev/null\n+++ b/" + target +
			"\n@@ -0,0 +1 @@\n+pwned\n"
		if err := g.Apply(ctx, dir, []byte(patch), ApplyOptions{}); kindOf(err) != "patch_failed" {
			t.Errorf("Apply creating %s = %v, want patch_failed", target, err)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "escaped.txt")); err == nil {
		t.Error("a patch wrote outside the repository")
	}
}
