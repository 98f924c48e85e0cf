package git

import (
	"strings"
	"testing"
)

func TestBranches(t *testing.T) {
	ctx, g := newGit(t)
	dir := newRepo(t, ctx, g)
	commitFiles(t, ctx, g, dir, "one", map[string]string{"a.txt": "1"})
	head := strings.TrimSpace(mustGit(t, ctx, g, dir, "rev-parse", "HEAD"))

	b, err := g.CreateBranch(ctx, dir, "feature/x", "")
	if err != nil || b.Name != "feature/x" || b.OID != head {
		t.Fatalf("CreateBranch = %+v, %v", b, err)
	}
	for _, tc := range []struct{ name, from, code string }{
		{"feature/x", "", "exist"},
		{"-f", "", "invalid"},
		{"a..b", "", "invalid"},
		{"HEAD", "", "invalid"},
		{"ok", "nope", "unknown_revision"},
		{"ok", "--all", "invalid"},
	} {
		if _, err := g.CreateBranch(ctx, dir, tc.name, tc.from); kindOf(err) != tc.code {
			t.Errorf("CreateBranch(%q, %q) = %v, want %s", tc.name, tc.from, err, tc.code)
		}
	}
	bs, err := g.ListBranches(ctx, dir)
	if err != nil || bs.Current != "main" || len(bs.Branches) != 2 || bs.Branches[0].Name != "feature/x" || bs.Branches[1].Name != "main" {
		t.Fatalf("ListBranches = %+v, %v", bs, err)
	}

	// Unmerged work on the branch: delete refuses without force.
	if err := g.Checkout(ctx, dir, "feature/x", false); err != nil {
		t.Fatal(err)
	}
	commitFiles(t, ctx, g, dir, "two", map[string]string{"b.txt": "2"})
	if err := g.DeleteBranch(ctx, dir, "feature/x", false); kindOf(err) != "branch_in_use" {
		t.Errorf("delete the current branch = %v", err)
	}
	if err := g.Checkout(ctx, dir, "main", false); err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteBranch(ctx, dir, "feature/x", false); kindOf(err) != "not_merged" {
		t.Errorf("delete unmerged = %v", err)
	}
	if err := g.DeleteBranch(ctx, dir, "nope", false); kindOf(err) != "not_exist" {
		t.Errorf("delete missing = %v", err)
	}
	if err := g.DeleteBranch(ctx, dir, "feature/x", true); err != nil {
		t.Errorf("delete with force = %v", err)
	}
}

func TestCheckout(t *testing.T) {
	ctx, g := newGit(t)
	dir := newRepo(t, ctx, g)
	commitFiles(t, ctx, g, dir, "one", map[string]string{"a.txt": "1"})
	mustGit(t, ctx, g, dir, "branch", "other")
	commitFiles(t, ctx, g, dir, "two", map[string]string{"a.txt": "2"})

	if err := g.Checkout(ctx, dir, "new", true); err != nil {
		t.Fatalf("checkout -b = %v", err)
	}
	if cur, _ := g.currentBranch(ctx, dir); cur != "new" {
		t.Errorf("current = %q", cur)
	}
	if err := g.Checkout(ctx, dir, "new", true); kindOf(err) != "exist" {
		t.Errorf("create existing = %v", err)
	}
	if err := g.Checkout(ctx, dir, "nope", false); kindOf(err) != "unknown_revision" {
		t.Errorf("unknown = %v", err)
	}
	if err := g.Checkout(ctx, dir, "-q", false); kindOf(err) != "invalid" {
		t.Errorf("option-like = %v", err)
	}
	writeFiles(t, dir, map[string]string{"a.txt": "local"})
	if err := g.Checkout(ctx, dir, "other", false); kindOf(err) != "local_changes" || !strings.Contains(err.Error(), "a.txt") {
		t.Errorf("local changes in the way = %v", err)
	}
	if got := readFile(t, dir, "a.txt"); got != "local" {
		t.Errorf("a.txt = %q after a refused checkout", got)
	}
	// A file named like the ref is not mistaken for it.
	writeFiles(t, dir, map[string]string{"a.txt": "2", "other": "file"})
	if err := g.Checkout(ctx, dir, "other", false); err != nil {
		t.Errorf("checkout other with a file named other = %v", err)
	}
	if got := readFile(t, dir, "a.txt"); got != "1" {
		t.Errorf("a.txt = %q on other", got)
	}
	head := strings.TrimSpace(mustGit(t, ctx, g, dir, "rev-parse", "main"))
	if err := g.Checkout(ctx, dir, head, false); err != nil {
		t.Errorf("detach = %v", err)
	}
	if cur, _ := g.currentBranch(ctx, dir); cur != "" {
		t.Errorf("current = %q when detached", cur)
	}
}

func FuzzParseBranches(f *testing.F) {
	f.Add([]byte("refs/heads/main\x00abc\x00origin/main\x00\nrefs/remotes/origin/HEAD\x00abc\x00\x00refs/remotes/origin/main\nrefs/remotes/origin/main\x00abc\x00\x00\n"))
	f.Add([]byte("refs/tags/x\x00a\x00\x00\n"))
	f.Add([]byte("\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, out []byte) {
		bs, err := ParseBranches(out)
		if err != nil {
			return
		}
		for _, b := range bs {
			if strings.ContainsAny(b.Name, "\x00\n") {
				t.Fatalf("name %q", b.Name)
			}
		}
	})
}
