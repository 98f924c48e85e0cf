package files

import (
	"path/filepath"
	"testing"
)

func TestMkdir(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		parents bool
		code    string
	}{
		{"new", "new", false, ""},
		{"nested without parents", "x/y", false, "not_exist"},
		{"nested with parents", "x/y", true, ""},
		{"existing dir", "dir", false, "exist"},
		{"existing dir with parents", "dir", true, ""},
		{"existing file", "a.txt", false, "exist"},
		{"existing file with parents", "a.txt", true, "exist"},
		{"root", "/", false, "exist"},
		{"under a file", "a.txt/x", true, "not_exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			err := fx.fs.Mkdir(tc.path, tc.parents)
			if kindOf(err) != tc.code {
				t.Fatalf("Mkdir(%q, %v) = %v, want %q", tc.path, tc.parents, err, tc.code)
			}
			if e, err := fx.fs.Stat(tc.path); err == nil && tc.code == "" && e.Type != TypeDir {
				t.Errorf("after Mkdir: %+v, want a dir", e)
			}
		})
	}
}

func TestMove(t *testing.T) {
	tests := []struct {
		name      string
		from, to  string
		overwrite bool
		code      string
		moved     string // content expected at to afterwards
	}{
		{"rename file", "a.txt", "c.txt", false, "", "hello world"},
		{"into dir", "a.txt", "dir/sub/a.txt", false, "", "hello world"},
		{"dir", "dir", "moved", false, "", "<dir>"},
		{"same path", "a.txt", "/a.txt", false, "", "hello world"},
		{"missing source", "nope", "c.txt", false, "not_exist", "<missing>"},
		{"missing target parent", "a.txt", "x/c.txt", false, "not_exist", "<missing>"},
		{"exists", "a.txt", "dir/b.txt", false, "exist", "bee"},
		{"overwrite", "a.txt", "dir/b.txt", true, "", "hello world"},
		{"dir over file", "dir/sub", "a.txt", true, "exist", "hello world"},
		{"file over dir", "a.txt", "dir/sub", true, "exist", "<dir>"},
		{"dir over dir", "dir/sub", "dir", true, "exist", "<dir>"},
		{"into itself", "dir", "dir/sub/x", false, "invalid", "<missing>"},
		{"root", "/", "x", false, "invalid", "<missing>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			err := fx.fs.Move(tc.from, tc.to, tc.overwrite)
			if kindOf(err) != tc.code {
				t.Fatalf("Move = %v, want %q", err, tc.code)
			}
			if got := contentAt(t, fx, tc.to); got != tc.moved {
				t.Errorf("at %s: %q, want %q", tc.to, got, tc.moved)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name      string
		path      string
		recursive bool
		code      string
	}{
		{"file", "a.txt", false, ""},
		{"dot file", "dir/sub/.keep", false, ""},
		{"link", "inlink", false, ""},
		{"non-empty dir", "dir", false, "not_empty"},
		{"non-empty dir recursive", "dir", true, ""},
		{"missing", "nope", false, "not_exist"},
		{"missing recursive", "nope", true, "not_exist"},
		{"root", "", true, "invalid"},
		{"root slash", "/", true, "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			mustSymlink(t, "dir", filepath.Join(fx.root, "inlink"))
			err := fx.fs.Remove(tc.path, tc.recursive)
			if kindOf(err) != tc.code {
				t.Fatalf("Remove = %v, want %q", err, tc.code)
			}
			_, serr := fx.fs.Stat(tc.path)
			if gone := kindOf(serr) == "not_exist"; gone != (tc.code == "" || tc.code == "not_exist") {
				t.Errorf("after Remove: Stat = %v", serr)
			}
		})
	}
}

func TestRemoveEmptyDirAndLinkToDir(t *testing.T) {
	fx := newFixture(t)
	mustSymlink(t, "dir", filepath.Join(fx.root, "inlink"))
	if err := fx.fs.Mkdir("empty", false); err != nil {
		t.Fatal(err)
	}
	if err := fx.fs.Remove("empty", false); err != nil {
		t.Errorf("Remove(empty dir) = %v", err)
	}
	if err := fx.fs.Remove("inlink", true); err != nil {
		t.Errorf("Remove(link to dir, recursive) = %v", err)
	}
	if got := contentAt(t, fx, "dir/b.txt"); got != "bee" {
		t.Errorf("link target's content = %q after removing the link", got)
	}
}
