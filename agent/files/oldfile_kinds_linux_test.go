package files

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// holdOld never blocks on nor follows what a process put in place of the
// file a restore replaces: a FIFO with no writer, a symlink (to a file
// inside or outside the root), a socket; whatever it holds is that entry
// itself.
func TestHoldOldKinds(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(out, "secret"), []byte("s"), 0o644))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(t, os.Symlink(filepath.Join(out, "secret"), filepath.Join(dir, "out-link")))
	must(t, os.WriteFile(filepath.Join(dir, "file"), []byte("f"), 0o644))
	must(t, os.Symlink("file", filepath.Join(dir, "in-link")))
	root, err := os.OpenRoot(dir)
	must(t, err)
	defer root.Close()
	for _, name := range []string{"fifo", "out-link", "in-link", "file"} {
		done := make(chan *os.File, 1)
		go func() { done <- holdOld(root, name) }()
		select {
		case f := <-done:
			if f == nil {
				t.Logf("holdOld(%s): nothing held", name)
				continue
			}
			fi, err := f.Stat()
			want, _ := os.Lstat(filepath.Join(dir, name))
			if err != nil || !os.SameFile(fi, want) {
				t.Errorf("holdOld(%s) holds %v (%v), not the entry itself", name, fi, err)
			}
			f.Close()
		case <-time.After(5 * time.Second):
			t.Fatalf("holdOld(%s) blocked", name)
		}
	}
}
