package files

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// wideTree makes directories three levels deep, many at each level (more
// than a walk lists ahead), with files and symlinks among them.
func wideTree(t *testing.T, dir string) {
	t.Helper()
	for i := range 12 {
		for j := range 6 {
			for k := range 3 {
				d := filepath.Join(dir, fmt.Sprintf("d%02d/e%d/f%d", i, j, k))
				must(t, os.MkdirAll(d, 0o755))
				must(t, os.WriteFile(filepath.Join(d, "x.txt"), []byte(d), 0o644))
			}
			must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("d%02d/e%d.txt", i, j)), []byte("e"), 0o644))
		}
		must(t, os.Symlink("e0", filepath.Join(dir, fmt.Sprintf("d%02d/link", i))))
	}
	must(t, os.WriteFile(filepath.Join(dir, "top.txt"), []byte("top"), 0o644))
}

// The scan lists directories ahead of its walk on other goroutines; its
// manifest is still every entry once, in the order of a plain walk (each
// directory before what it holds, names sorted), with what is excluded
// left out and its subtree never listed.
func TestScanListsAheadInOrder(t *testing.T) {
	dir := t.TempDir()
	wideTree(t, dir)
	var want []string
	must(t, filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(dir, p)
		r = filepath.ToSlash(r)
		switch {
		case r == ".":
			return nil
		case strings.HasSuffix(r, "/e3"):
			return filepath.SkipDir
		}
		want = append(want, r)
		return nil
	}))
	f := newFS(t, dir)
	s, err := f.Scan(context.Background(), ".", ScanOptions{Exclude: []string{"e3"}})
	must(t, err)
	var got []string
	for _, e := range s.Entries {
		got = append(got, e.Path)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("scan order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A scan cancelled while it walks ends, and the goroutines that listed
// ahead with it.
func TestScanCancelledEndsListers(t *testing.T) {
	dir := t.TempDir()
	wideTree(t, dir)
	f := newFS(t, dir)
	before := runtime.NumGoroutine()
	for n := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(time.Duration(n) * 100 * time.Microsecond)
			cancel()
		}()
		f.Scan(ctx, ".", ScanOptions{})
		cancel()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after the cancelled scans, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// A directory replaced by a symlink (to another directory inside the
// root) between its parent's listing and its own is never listed through
// the link: the scan fails as a source that changed, whichever goroutine
// lists it.
func TestScanDirSwappedForLink(t *testing.T) {
	dir := t.TempDir()
	wideTree(t, dir)
	var once sync.Once
	listHook = func(c string) {
		if strings.HasSuffix(c, "d03/e1") {
			once.Do(func() {
				must(t, os.Rename(filepath.Join(dir, "d03/e1"), filepath.Join(dir, "moved")))
				must(t, os.Symlink("../d05", filepath.Join(dir, "d03/e1")))
			})
		}
	}
	t.Cleanup(func() { listHook = nil })
	f := newFS(t, dir)
	s, err := f.Scan(context.Background(), ".", ScanOptions{})
	if err == nil {
		for _, e := range s.Entries {
			if strings.HasPrefix(e.Path, "d03/e1/") && !strings.HasPrefix(e.Path, "d03/e1/f") {
				t.Fatalf("the scan listed d05 through the link at d03/e1: %s", e.Path)
			}
		}
		t.Fatal("a directory swapped for a link under the scan went unnoticed")
	}
	if !errors.Is(err, ErrSourceChanged) {
		t.Fatalf("err %v, want ErrSourceChanged", err)
	}
}
