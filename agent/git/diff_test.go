package git

import (
	"slices"
	"strings"
	"testing"
)

// diffRepo has two commits and, on top, a work tree change, a staged binary
// change and a staged rename.
func diffRepo(t *testing.T) (dir string, d func(DiffOptions) (*Diff, error)) {
	ctx, g := newGit(t)
	dir = newRepo(t, ctx, g)
	commitFiles(t, ctx, g, dir, "one", map[string]string{
		"a.txt":   lines("one", "two", "three"),
		"b.bin":   "\x00\x01binary",
		"old.txt": lines("a long enough line", "to be", "recognised as", "a rename"),
	})
	commitFiles(t, ctx, g, dir, "two", map[string]string{"c.txt": "c\n"})
	writeFiles(t, dir, map[string]string{"a.txt": lines("one", "2", "three", "four"), "b.bin": "\x00\x02binary!"})
	mustGit(t, ctx, g, dir, "add", "b.bin")
	mustGit(t, ctx, g, dir, "mv", "old.txt", "new.txt")
	return dir, func(o DiffOptions) (*Diff, error) { return g.Diff(ctx, dir, o) }
}

func TestDiff(t *testing.T) {
	_, diff := diffRepo(t)
	tests := []struct {
		name  string
		opts  DiffOptions
		files []DiffFile
		patch []string // substrings of the patch
		code  string
	}{
		{"work tree", DiffOptions{}, []DiffFile{{Path: "a.txt", Added: 2, Deleted: 1}},
			[]string{"diff --git a/a.txt b/a.txt", "-two\n+2\n", "+four\n"}, ""},
		{"staged", DiffOptions{Staged: true}, []DiffFile{{Path: "b.bin", Binary: true}, {Path: "new.txt", OldPath: "old.txt"}},
			[]string{"Binary files a/b.bin and b/b.bin differ", "rename from old.txt\nrename to new.txt"}, ""},
		{"against ref", DiffOptions{Ref: "HEAD~1", Paths: []string{"a.txt", "c.txt"}},
			[]DiffFile{{Path: "a.txt", Added: 2, Deleted: 1}, {Path: "c.txt", Added: 1}}, []string{"new file mode"}, ""},
		{"range", DiffOptions{Ref: "HEAD~1..HEAD"}, []DiffFile{{Path: "c.txt", Added: 1}}, []string{"+c\n"}, ""},
		{"paths literal", DiffOptions{Paths: []string{"*.txt"}}, nil, nil, ""},
		{"unknown ref", DiffOptions{Ref: "nope"}, nil, nil, "unknown_revision"},
		{"option as ref", DiffOptions{Ref: "--output=/tmp/x"}, nil, nil, "invalid"},
		{"space in ref", DiffOptions{Ref: "HEAD --output"}, nil, nil, "invalid"},
		{"nul in path", DiffOptions{Paths: []string{"a\x00b"}}, nil, nil, "invalid"},
		{"path outside repository", DiffOptions{Paths: []string{"/etc/passwd"}}, nil, nil, "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := diff(tc.opts)
			if kindOf(err) != tc.code {
				t.Fatalf("Diff error = %v, want %q", err, tc.code)
			}
			if err != nil {
				return
			}
			if !slices.Equal(got.Files, tc.files) {
				t.Errorf("Files = %+v, want %+v", got.Files, tc.files)
			}
			for _, s := range tc.patch {
				if !strings.Contains(got.Patch, s) {
					t.Errorf("Patch lacks %q:\n%s", s, got.Patch)
				}
			}
		})
	}
}

func TestDiffUnborn(t *testing.T) {
	ctx, g := newGit(t)
	dir := newRepo(t, ctx, g)
	writeFiles(t, dir, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	mustGit(t, ctx, g, dir, "add", "a.txt")
	d, err := g.Diff(ctx, dir, DiffOptions{Staged: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []DiffFile{{Path: "a.txt", Added: 1}}; !slices.Equal(d.Files, want) {
		t.Errorf("Files = %+v, want %+v", d.Files, want)
	}
	if !strings.Contains(d.Patch, "new file mode") {
		t.Errorf("Patch = %q, want a new file", d.Patch)
	}
	if d, err := g.Diff(ctx, dir, DiffOptions{}); err != nil || len(d.Files) != 0 {
		t.Errorf("work tree diff = %+v, %v; want empty", d, err)
	}
	if _, err := g.Diff(ctx, dir, DiffOptions{Ref: "HEAD"}); kindOf(err) != "unknown_revision" {
		t.Errorf("Diff HEAD = %v, want unknown_revision", err)
	}
}
