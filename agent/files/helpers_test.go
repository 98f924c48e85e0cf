package files

import (
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fixture is a root with a sentinel tree beside it:
//
//	base/sibling.txt
//	base/outside/{secret.txt,f.txt,sub/inner.txt}
//	base/root/{a.txt,dir/b.txt,dir/sub/}
type fixture struct {
	base, root, outside string
	fs                  *FS
}

// newFixture builds the tree and opens an FS on base/root.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	base := t.TempDir()
	fx := &fixture{base: base, root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for name, content := range map[string]string{
		"sibling.txt":           "sibling",
		"outside/secret.txt":    "secret",
		"outside/f.txt":         "outside f",
		"outside/sub/inner.txt": "inner",
		"root/a.txt":            "hello world",
		"root/dir/b.txt":        "bee",
		"root/dir/sub/.keep":    "",
	} {
		mustWrite(t, filepath.Join(base, filepath.FromSlash(name)), content)
	}
	f, err := New(fx.root)
	if err != nil {
		t.Fatalf("New(%s): %v", fx.root, err)
	}
	t.Cleanup(func() { f.Close() })
	fx.fs = f
	return fx
}

// links adds the symbolic links escape tests use, relative to the root.
func (fx *fixture) links(t testing.TB) {
	t.Helper()
	for name, target := range map[string]string{
		"toetc":      "/etc",
		"toparent":   "..",
		"tooutside":  "../outside",
		"absoutside": fx.outside,
		"absinside":  filepath.Join(fx.root, "dir"),
		"secretlink": "../outside/secret.txt",
		"dir/mid":    "../../outside",
		"inlink":     "dir/b.txt",
		"loop":       "loop",
	} {
		mustSymlink(t, filepath.FromSlash(target), filepath.Join(fx.root, filepath.FromSlash(name)))
	}
}

// mustWrite creates file name with content and its parents.
func mustWrite(t testing.TB, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustSymlink makes a link, skipping the test where the OS refuses links
// (Windows without developer mode).
func mustSymlink(t testing.TB, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		if runtime.GOOS == "windows" {
			t.Skipf("symlinks unavailable: %v", err)
		}
		t.Fatalf("symlink %s -> %s: %v", name, target, err)
	}
}

// readFile returns the content of name, or "<err>" when it cannot be read.
func readFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// snapshot records everything under dir except the subtree skip: type, mode,
// size, content, link target and modification time.
func snapshot(t testing.TB, dir, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			out[p] = "skipped"
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		s := fi.Mode().String() + " " + fi.ModTime().String()
		switch {
		case fi.Mode().IsRegular():
			s += " " + readFile(t, p)
		case fi.Mode()&iofs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			s += " -> " + target
		}
		out[p] = s
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return out
}

// diffSnapshots describes how after differs from before.
func diffSnapshots(before, after map[string]string) []string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "removed "+k)
		} else if v != w {
			d = append(d, "changed "+k+": "+v+" => "+w)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "created "+k)
		}
	}
	return d
}

// kindNames name the kinds of error (see ErrOutsideRoot) in test tables.
var kindNames = map[error]string{
	ErrOutsideRoot:      "outside_root",
	iofs.ErrNotExist:    "not_exist",
	iofs.ErrExist:       "exist",
	iofs.ErrPermission:  "permission",
	iofs.ErrInvalid:     "invalid",
	iofs.ErrClosed:      "closed",
	ErrNotEmpty:         "not_empty",
	ErrDiskFull:         "disk_full",
	ErrTooManyEntries:   "too_many_entries",
	ErrChecksumMismatch: "checksum_mismatch",
	ErrUploadDone:       "upload_done",
}

// kindOf names the kind of err: "" for nil, "no kind" for an error of none
// (which the agent reports as internal).
func kindOf(err error) string {
	if err == nil {
		return ""
	}
	var ke *kindError
	if !errors.As(err, &ke) || ke.kind == nil {
		return "no kind"
	}
	if n, ok := kindNames[ke.kind]; ok {
		return n
	}
	return "unknown kind: " + ke.kind.Error()
}

// tempFiles lists the temporary files left anywhere under dir.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), TempPrefix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

const outsideRoot = "outside_root"
