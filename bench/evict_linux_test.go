package main

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident counts the pages of file p in the page cache.
func resident(t *testing.T, p string) int {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestEvictCopies holds evictCopies to dropping the cached pages of every
// file under the directories it is given, in subdirectories too, and to
// leaving other files' pages alone.
func TestEvictCopies(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC {
		t.Skipf("%s is tmpfs, whose pages cannot be dropped: run with TMPDIR on a disk", dir)
	}
	copyDir, other := filepath.Join(dir, "copy"), filepath.Join(dir, "other")
	data := make([]byte, 1<<20)
	files := []string{filepath.Join(copyDir, "a"), filepath.Join(copyDir, "sub", "b"), filepath.Join(other, "c")}
	for _, p := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	unix.Sync()
	for _, p := range files {
		if n := resident(t, p); n == 0 {
			t.Fatalf("%s: no page cached right after it was written", p)
		}
	}
	if err := evictCopies([]string{copyDir}); err != nil {
		t.Fatal(err)
	}
	for _, p := range files[:2] {
		if n := resident(t, p); n != 0 {
			t.Errorf("%s: %d pages still cached after evictCopies", p, n)
		}
	}
	if n := resident(t, files[2]); n == 0 {
		t.Errorf("%s (not under the directories given): its pages were dropped too", files[2])
	}
	// A directory gone (the store's, removed as it walked) is no error.
	if err := evictCopies([]string{filepath.Join(dir, "gone")}); err != nil {
		t.Errorf("evictCopies of a directory that is gone: %v", err)
	}
}
