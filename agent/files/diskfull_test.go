package files

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/outposthq/outpost/internal/tmpfs"
)

// fullDisk mounts a 1 MiB tmpfs at root/full holding full/f.txt ("old").
func fullDisk(t *testing.T) *fixture {
	t.Helper()
	fx := newFixture(t)
	dir := filepath.Join(fx.root, "full")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmpfs.Mount(t, dir, 1<<20)
	mustWrite(t, filepath.Join(dir, "f.txt"), "old")
	return fx
}

// TestWriteDiskFull fills the disk with a write and with an upload: each
// fails with ErrDiskFull, the old file keeps its content, and no
// temporary file stays, not even before the upload is aborted.
func TestWriteDiskFull(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 2<<20)
	tests := []struct {
		name  string
		write func(fx *fixture) error
	}{
		{"write", func(fx *fixture) error {
			_, err := fx.fs.Write("full/f.txt", bytes.NewReader(big), WriteOptions{Overwrite: true})
			return err
		}},
		{"upload chunks", func(fx *fixture) error {
			u, err := fx.fs.BeginWrite("full/f.txt", WriteOptions{Overwrite: true})
			if err != nil {
				return err
			}
			const chunk = 256 << 10
			for off := 0; off < len(big); off += chunk {
				if _, err = u.WriteAt(big[off:off+chunk], int64(off)); err != nil {
					break
				}
			}
			if tmp := tempFiles(t, fx.root); len(tmp) > 0 {
				t.Errorf("temporary files after the failed chunk, before abort: %v", tmp)
			}
			if _, cerr := u.WriteAt([]byte("y"), 0); kindOf(cerr) != "disk_full" {
				t.Errorf("chunk after the failure = %v, want disk_full", cerr)
			}
			if _, cerr := u.Commit(); kindOf(cerr) != "disk_full" {
				t.Errorf("Commit after the failure = %v, want disk_full", cerr)
			}
			if aerr := u.Abort(); aerr != nil {
				t.Errorf("Abort after the failure = %v", aerr)
			}
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := fullDisk(t)
			if err := tc.write(fx); kindOf(err) != "disk_full" {
				t.Fatalf("error = %v, want disk_full", err)
			}
			if got := contentAt(t, fx, "full/f.txt"); got != "old" {
				t.Errorf("content = %.40q, want the old content", got)
			}
			if tmp := tempFiles(t, fx.base); len(tmp) > 0 {
				t.Errorf("temporary files left: %v", tmp)
			}
			// The space is free again: a small write fits.
			if _, err := fx.fs.Write("full/small.txt", bytes.NewReader([]byte("fits")), WriteOptions{}); err != nil {
				t.Errorf("small write after the failure: %v", err)
			}
		})
	}
}
