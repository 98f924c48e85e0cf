package files

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	tests := []struct {
		name, in, want, code string
	}{
		{"empty", "", ".", ""},
		{"dot", ".", ".", ""},
		{"slash", "/", ".", ""},
		{"leading slash", "/a/b", "a/b", ""},
		{"double slash", "//a//b/", "a/b", ""},
		{"inner dotdot", "a/../b", "b", ""},
		{"dot segments", "./a/./b/.", "a/b", ""},
		{"back to root", "a/..", ".", ""},
		{"dotdot", "..", "", outsideRoot},
		{"slash dotdot", "/..", "", outsideRoot},
		{"dotdot prefix", "../a", "", outsideRoot},
		{"inner escape", "a/../../b", "", outsideRoot},
		{"dotdot name", "..a/b", "..a/b", ""},
		{"nul", "a\x00b", "", outsideRoot},
		{"too long", strings.Repeat("a", MaxPathLen+1), "", "invalid"},
	}
	if runtime.GOOS == "windows" {
		tests = append(tests, []struct{ name, in, want, code string }{
			{"drive", `C:\Windows`, "", outsideRoot},
			{"drive relative", `C:x`, "", outsideRoot},
			{"unc", `\\server\share\x`, "", outsideRoot},
			{"backslash dotdot", `a\..\..\x`, "", outsideRoot},
			{"device", `NUL`, "", outsideRoot},
		}...)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Clean(tc.in)
			if got != tc.want || kindOf(err) != tc.code {
				t.Errorf("Clean(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.code)
			}
		})
	}
}

func TestStat(t *testing.T) {
	fx := newFixture(t)
	fx.links(t)
	tests := []struct {
		name, path string
		want       Entry // ModTime ignored
		code       string
	}{
		{"file", "a.txt", Entry{Name: "a.txt", Path: "a.txt", Type: TypeFile, Size: 11, Mode: 0o644}, ""},
		{"leading slash", "/dir/b.txt", Entry{Name: "b.txt", Path: "dir/b.txt", Type: TypeFile, Size: 3, Mode: 0o644}, ""},
		{"link", "inlink", Entry{Name: "inlink", Path: "inlink", Type: TypeSymlink, LinkTarget: "dir/b.txt"}, ""},
		{"link out is described", "toetc", Entry{Name: "toetc", Path: "toetc", Type: TypeSymlink, LinkTarget: "/etc"}, ""},
		{"missing", "nope", Entry{}, "not_exist"},
		{"under a file", "a.txt/x", Entry{}, "not_exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fx.fs.Stat(tc.path)
			if kindOf(err) != tc.code {
				t.Fatalf("Stat(%q) error = %v, want %q", tc.path, err, tc.code)
			}
			got.ModTime = tc.want.ModTime
			if tc.want.Type == TypeSymlink {
				got.Size, got.Mode = 0, 0
			}
			if got != tc.want {
				t.Errorf("Stat(%q) = %+v, want %+v", tc.path, got, tc.want)
			}
		})
	}
	root, err := fx.fs.Stat("")
	if err != nil || root.Type != TypeDir || root.Path != "." {
		t.Errorf("Stat(root) = %+v, %v; want dir \".\"", root, err)
	}
}

// paths lists the Path of each entry.
func paths(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Path)
	}
	return out
}

func TestList(t *testing.T) {
	fx := newFixture(t)
	mustWrite(t, filepath.Join(fx.root, "dir.txt"), "")
	mustSymlink(t, "../outside", filepath.Join(fx.root, "dir", "out"))
	tests := []struct {
		name      string
		path      string
		recursive bool
		limit     int
		want      []string
		code      string
	}{
		{"root", "", false, 0, []string{"a.txt", "dir", "dir.txt"}, ""},
		{"recursive sorted by path", "/", true, 0,
			[]string{"a.txt", "dir", "dir.txt", "dir/b.txt", "dir/out", "dir/sub", "dir/sub/.keep"}, ""},
		{"subdir", "dir", false, 0, []string{"dir/b.txt", "dir/out", "dir/sub"}, ""},
		{"file", "a.txt", true, 0, []string{"a.txt"}, ""},
		{"link not followed", "dir/out", true, 0, []string{"dir/out"}, ""},
		{"within limit", "dir", false, 3, []string{"dir/b.txt", "dir/out", "dir/sub"}, ""},
		{"over limit", "", true, 3, nil, "too_many_entries"},
		{"missing", "nope", false, 0, nil, "not_exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fx.fs.List(tc.path, tc.recursive, tc.limit)
			if kindOf(err) != tc.code {
				t.Fatalf("List error = %v, want %q", err, tc.code)
			}
			if !slices.Equal(paths(got), tc.want) {
				t.Errorf("List = %q, want %q", paths(got), tc.want)
			}
		})
	}
}

func TestRead(t *testing.T) {
	fx := newFixture(t)
	fx.links(t)
	tests := []struct {
		name           string
		path           string
		offset, length int64
		want, code     string
	}{
		{"whole", "a.txt", 0, -1, "hello world", ""},
		{"range", "a.txt", 6, 3, "wor", ""},
		{"to end", "a.txt", 6, -1, "world", ""},
		{"length past end", "a.txt", 6, 100, "world", ""},
		{"zero length", "a.txt", 3, 0, "", ""},
		{"offset at end", "a.txt", 11, -1, "", ""},
		{"offset past end", "a.txt", 12, -1, "", "invalid"},
		{"negative offset", "a.txt", -1, -1, "", "invalid"},
		{"link inside followed", "inlink", 0, -1, "bee", ""},
		{"directory", "dir", 0, -1, "", "invalid"},
		{"missing", "nope.txt", 0, -1, "", "not_exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, e, err := fx.fs.Read(tc.path, tc.offset, tc.length)
			if kindOf(err) != tc.code {
				t.Fatalf("Read error = %v, want %q", err, tc.code)
			}
			if err != nil {
				return
			}
			defer r.Close()
			b, err := io.ReadAll(r)
			if err != nil || string(b) != tc.want {
				t.Errorf("Read = %q, %v; want %q", b, err, tc.want)
			}
			if e.Type != TypeFile || e.Path != tc.path {
				t.Errorf("Entry = %+v, want file %q", e, tc.path)
			}
		})
	}
}

func TestReadFIFODoesNotBlock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs on windows")
	}
	fx := newFixture(t)
	if err := mkfifo(filepath.Join(fx.root, "fifo")); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, _, err := fx.fs.Read("fifo", 0, -1); kindOf(err) != "invalid" {
		t.Errorf("Read(fifo) = %v, want invalid", err)
	}
}

func TestClosed(t *testing.T) {
	fx := newFixture(t)
	if err := fx.fs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fx.fs.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := fx.fs.Stat("a.txt"); err == nil {
		t.Error("Stat after Close succeeded")
	}
}

func TestNewMissing(t *testing.T) {
	_, err := New(filepath.Join(t.TempDir(), "nope"))
	if kindOf(err) != "not_exist" {
		t.Errorf("New(missing) = %v, want not_exist", err)
	}
	if _, err := os.Stat(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("New created the root")
	}
}
