package git

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestStatusNotRepo(t *testing.T) {
	ctx, g := newGit(t)
	dir := t.TempDir()
	g.Ceiling = dir
	st, err := g.Status(ctx, dir, StatusOptions{})
	if err != nil || st.IsRepo {
		t.Fatalf("Status = %+v, %v; want IsRepo false", st, err)
	}
}

// TestStatusCeiling: a root inside someone else's repository is not a
// repository when the ceiling is the root.
func TestStatusCeiling(t *testing.T) {
	ctx, g := newGit(t)
	outer := newRepo(t, ctx, g)
	root := filepath.Join(outer, "root")
	writeFiles(t, root, map[string]string{"sub/f.txt": "x"})
	if st, err := g.Status(ctx, filepath.Join(root, "sub"), StatusOptions{}); err != nil || !st.IsRepo {
		t.Fatalf("without ceiling: %+v, %v; want the outer repository", st, err)
	}
	g.Ceiling = root
	if st, err := g.Status(ctx, filepath.Join(root, "sub"), StatusOptions{}); err != nil || st.IsRepo {
		t.Fatalf("with ceiling: %+v, %v; want IsRepo false", st, err)
	}
	if _, err := g.Diff(ctx, root, DiffOptions{Paths: []string{"../../etc/passwd", "sub/f.txt"}}); kindOf(err) != "not_repository" {
		t.Errorf("Diff outside a repository = %v, want not_repository", err)
	}
	mustGit(t, ctx, g, root, "init", "-q")
	if st, err := g.Status(ctx, filepath.Join(root, "sub"), StatusOptions{}); err != nil || !st.IsRepo {
		t.Fatalf("repository at the ceiling: %+v, %v; want IsRepo true", st, err)
	}
}

func TestStatusUnborn(t *testing.T) {
	ctx, g := newGit(t)
	dir := newRepo(t, ctx, g)
	writeFiles(t, dir, map[string]string{"staged.txt": "s", "dir/untracked.txt": "u"})
	mustGit(t, ctx, g, dir, "add", "staged.txt")
	st, err := g.Status(ctx, dir, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := &Status{IsRepo: true, Branch: Branch{Head: "main", Unborn: true}, Entries: []StatusEntry{
		{Kind: KindChanged, Path: "staged.txt", Index: "A", Worktree: ".", Submodule: "N..."},
		{Kind: KindUntracked, Path: "dir/untracked.txt", Index: "?", Worktree: "?"},
	}}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("Status =\n%+v\nwant\n%+v", st, want)
	}
}

func TestStatusEntries(t *testing.T) {
	ctx, g := newGit(t)
	dir := newRepo(t, ctx, g)
	commitFiles(t, ctx, g, dir, "init", map[string]string{
		"a.txt": "a\n", "b.txt": "b\n", "gone.txt": "g\n", "sp ace.txt": "s\n",
		"old.txt":    lines("a long enough line", "to be", "recognised as", "a rename"),
		".gitignore": "*.log\n",
	})
	writeFiles(t, dir, map[string]string{"a.txt": "a2\n", "b.txt": "b2\n", "sp ace.txt": "s2\n", "x.log": "l", "new/n.txt": "n"})
	mustGit(t, ctx, g, dir, "add", "b.txt")
	mustGit(t, ctx, g, dir, "mv", "old.txt", "renamed.txt")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	head := mustGit(t, ctx, g, dir, "rev-parse", "HEAD")
	st, err := g.Status(ctx, dir, StatusOptions{Ignored: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.Branch.OID+"\n" != head || st.Branch.Head != "main" || st.Branch.Unborn {
		t.Errorf("Branch = %+v, want main at %s", st.Branch, head)
	}
	got := map[string]StatusEntry{}
	for _, e := range st.Entries {
		e.Submodule = ""
		got[e.Path] = e
	}
	want := map[string]StatusEntry{
		"a.txt":       {Kind: KindChanged, Path: "a.txt", Index: ".", Worktree: "M"},
		"b.txt":       {Kind: KindChanged, Path: "b.txt", Index: "M", Worktree: "."},
		"gone.txt":    {Kind: KindChanged, Path: "gone.txt", Index: ".", Worktree: "D"},
		"sp ace.txt":  {Kind: KindChanged, Path: "sp ace.txt", Index: ".", Worktree: "M"},
		"renamed.txt": {Kind: KindRenamed, Path: "renamed.txt", OrigPath: "old.txt", Index: "R", Worktree: ".", Score: 100},
		"new/n.txt":   {Kind: KindUntracked, Path: "new/n.txt", Index: "?", Worktree: "?"},
		"x.log":       {Kind: KindIgnored, Path: "x.log", Index: "!", Worktree: "!"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries =\n%+v\nwant\n%+v", got, want)
	}
	st, err = g.Status(ctx, dir, StatusOptions{})
	if err != nil || len(st.Entries) != len(want)-1 {
		t.Errorf("without Ignored: %d entries, %v; want %d", len(st.Entries), err, len(want)-1)
	}
}

// conflictRepo makes a repository whose merge of "feature" into main left
// a.txt unmerged.
func conflictRepo(t *testing.T, ctx context.Context, g *Git) string {
	t.Helper()
	dir := newRepo(t, ctx, g)
	commitFiles(t, ctx, g, dir, "init", map[string]string{"a.txt": "base\n"})
	mustGit(t, ctx, g, dir, "checkout", "-q", "-b", "feature")
	commitFiles(t, ctx, g, dir, "feature", map[string]string{"a.txt": "feature\n"})
	mustGit(t, ctx, g, dir, "checkout", "-q", "main")
	commitFiles(t, ctx, g, dir, "main", map[string]string{"a.txt": "main\n"})
	res, err := g.run(ctx, call{dir: dir, args: []string{"merge", "feature"}})
	if err != nil || res.code == 0 {
		t.Fatalf("merge: %v exit %d, want a conflict", err, res.code)
	}
	return dir
}

func TestStatusUnmerged(t *testing.T) {
	ctx, g := newGit(t)
	dir := conflictRepo(t, ctx, g)
	st, err := g.Status(ctx, dir, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []StatusEntry{{Kind: KindUnmerged, Path: "a.txt", Index: "U", Worktree: "U", Submodule: "N..."}}
	if !reflect.DeepEqual(st.Entries, want) {
		t.Errorf("entries = %+v, want %+v", st.Entries, want)
	}
}

func TestStatusAheadBehind(t *testing.T) {
	ctx, g := newGit(t)
	dir := newRepo(t, ctx, g)
	commitFiles(t, ctx, g, dir, "init", map[string]string{"a.txt": "a"})
	mustGit(t, ctx, g, dir, "checkout", "-q", "-b", "feature", "--track", "main")
	commitFiles(t, ctx, g, dir, "f1", map[string]string{"f1": "1"})
	commitFiles(t, ctx, g, dir, "f2", map[string]string{"f2": "2"})
	mustGit(t, ctx, g, dir, "checkout", "-q", "main")
	commitFiles(t, ctx, g, dir, "m1", map[string]string{"m1": "1"})
	mustGit(t, ctx, g, dir, "checkout", "-q", "feature")
	st, err := g.Status(ctx, dir, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := st.Branch
	if b.Head != "feature" || b.Upstream != "main" || b.Ahead != 2 || b.Behind != 1 {
		t.Errorf("Branch = %+v, want feature tracking main, +2 -1", b)
	}
	mustGit(t, ctx, g, dir, "checkout", "-q", "--detach")
	st, err = g.Status(ctx, dir, StatusOptions{})
	if err != nil || !st.Branch.Detached || st.Branch.Head != "" || st.Branch.OID == "" {
		t.Errorf("detached: %+v, %v", st.Branch, err)
	}
}
