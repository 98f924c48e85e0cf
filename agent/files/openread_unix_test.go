//go:build unix

package files

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// openRead (a snapshot's opens: the scan, the chunks sent) opens what
// os.Root would and refuses what it refuses: a file two levels down, one
// through a symlinked directory that stays inside the root, not one
// through a symlink that leaves it (nor a final symlink out), and a FIFO
// without hanging.
func TestOpenRead(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "a/b"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "a/b/f.txt"), []byte("in the root"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("outside"), 0o644))
	must(t, os.Symlink("a", filepath.Join(dir, "in")))
	must(t, os.Symlink(outside, filepath.Join(dir, "out")))
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "a/leak")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "a/fifo"), 0o644))
	f, err := New(dir)
	must(t, err)
	defer f.Close()
	for _, c := range []string{"a/b/f.txt", "in/b/f.txt"} {
		file, err := f.openRead(c)
		if err != nil {
			t.Fatalf("openRead(%s): %v", c, err)
		}
		b, err := io.ReadAll(file)
		file.Close()
		if err != nil || string(b) != "in the root" {
			t.Fatalf("openRead(%s) read %q, %v", c, b, err)
		}
	}
	for _, c := range []string{"out/secret", "a/leak", "a/b/missing", "../" + filepath.Base(outside) + "/secret"} {
		if file, err := f.openRead(c); err == nil {
			b, _ := io.ReadAll(file)
			file.Close()
			t.Fatalf("openRead(%s) opened it (%q), want an error", c, b)
		}
	}
	done := make(chan error, 1)
	go func() {
		file, err := f.openRead("a/fifo")
		if err == nil {
			file.Close()
		}
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("openRead of a FIFO with no writer hangs")
	}
}
