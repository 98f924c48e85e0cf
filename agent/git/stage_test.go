package git

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// staged lists the paths of dir's index that differ from HEAD (or all of
// them on an unborn HEAD), sorted.
func staged(t *testing.T, g *Git, dir string) []string {
	t.Helper()
	ctx, _ := newGit(t)
	st, err := g.Status(ctx, dir, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range st.Entries {
		if e.Kind != KindUntracked && e.Index != "." {
			out = append(out, e.Path+":"+e.Index)
		}
	}
	sort.Strings(out)
	return out
}

func TestAddReset(t *testing.T) {
	tests := []struct {
		name   string
		unborn bool
		add    StageOptions
		reset  *StageOptions
		code   string
		want   string // staged paths after, comma-separated
	}{
		{"paths", false, StageOptions{Paths: []string{"new.txt"}}, nil, "", "new.txt:A"},
		{"all, new and deleted", false, StageOptions{All: true}, nil, "", "a.txt:M,gone.txt:D,new.txt:A,sub/-x*.txt:A"},
		{"literal path like an option and a glob", false, StageOptions{Paths: []string{"sub/-x*.txt"}}, nil, "", "sub/-x*.txt:A"},
		{"glob is not expanded", false, StageOptions{Paths: []string{"*.txt"}}, nil, "not_exist", ""},
		{"missing path", false, StageOptions{Paths: []string{"nope.txt"}}, nil, "not_exist", ""},
		{"outside the repository", false, StageOptions{Paths: []string{"../x"}}, nil, "invalid", ""},
		{"neither", false, StageOptions{}, nil, "invalid", ""},
		{"both", false, StageOptions{All: true, Paths: []string{"a.txt"}}, nil, "invalid", ""},
		{"reset paths", false, StageOptions{All: true}, &StageOptions{Paths: []string{"a.txt", "new.txt"}}, "", "gone.txt:D,sub/-x*.txt:A"},
		{"reset all", false, StageOptions{All: true}, &StageOptions{All: true}, "", ""},
		{"unborn add all", true, StageOptions{All: true}, nil, "", "a.txt:A,new.txt:A,sub/-x*.txt:A"},
		{"unborn reset paths", true, StageOptions{All: true}, &StageOptions{Paths: []string{"new.txt"}}, "", "a.txt:A,sub/-x*.txt:A"},
		{"unborn reset all", true, StageOptions{All: true}, &StageOptions{All: true}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, g := newGit(t)
			dir := newRepo(t, ctx, g)
			if !tc.unborn {
				commitFiles(t, ctx, g, dir, "one", map[string]string{"a.txt": "1", "gone.txt": "g"})
				if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
					t.Fatal(err)
				}
			}
			writeFiles(t, dir, map[string]string{"a.txt": "2", "new.txt": "n", "sub/-x*.txt": "x"})
			err := g.Add(ctx, dir, tc.add)
			if tc.reset != nil && err == nil {
				err = g.Reset(ctx, dir, *tc.reset)
			}
			if kindOf(err) != tc.code {
				t.Fatalf("err = %v, want %q", err, tc.code)
			}
			if got := strings.Join(staged(t, g, dir), ","); err == nil && got != tc.want {
				t.Errorf("staged = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAddNotRepository(t *testing.T) {
	ctx, g := newGit(t)
	if err := g.Add(ctx, t.TempDir(), StageOptions{All: true}); kindOf(err) != "not_repository" {
		t.Errorf("Add outside a repository = %v", err)
	}
}
