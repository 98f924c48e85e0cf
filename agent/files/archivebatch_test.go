package files

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestExtractArchiveBatchOrder: whatever the batch sizes, an unpack keeps
// the stream's order where it matters: a name written twice (also after
// more directories than an unpack keeps open), a hard link to a file of
// the batch, a file under a pre-existing symlink to a directory and then
// a file replacing that symlink, a directory and a symlink after pending
// files. The journal is empty and no temporary file is left.
func TestExtractArchiveBatchOrder(t *testing.T) {
	for _, tc := range []struct {
		files int
		bytes int64
	}{{1, 4 << 20}, {2, 4 << 20}, {3, 4 << 20}, {7, 4 << 20}, {256, 4 << 20}, {256, 10}, {256, 1}} {
		t.Run(fmt.Sprintf("batch %d files %d bytes", tc.files, tc.bytes), func(t *testing.T) {
			oldF, oldB := maxPendingFiles, maxPendingBytes
			maxPendingFiles, maxPendingBytes = tc.files, tc.bytes
			t.Cleanup(func() { maxPendingFiles, maxPendingBytes = oldF, oldB })

			f, dir, jp := journaledFS(t)
			dest := filepath.Join(dir, "dest")
			must(t, os.MkdirAll(filepath.Join(dest, "tgt"), 0o755))
			must(t, os.Symlink("tgt", filepath.Join(dest, "l")))
			var es []tarEntry
			for i := range maxUnpackDirs + 6 {
				es = append(es, tarEntry{name: fmt.Sprintf("dir%02d/f", i), body: fmt.Sprintf("v1-%d", i)})
			}
			es = append(es,
				tarEntry{name: "dir00/f", body: "v2"},
				tarEntry{name: "A", body: "a1"},
				tarEntry{name: "A", body: "a2"},
				tarEntry{name: "H", typ: tar.TypeLink, link: "A"},
				tarEntry{name: "l/x", body: "lx"},
				tarEntry{name: "l", body: "file-l"},
				tarEntry{name: "m1", body: "m1"},
				tarEntry{name: "newdir/", typ: tar.TypeDir},
				tarEntry{name: "newdir/f", body: "nf"},
				tarEntry{name: "m2", body: "m2"},
				tarEntry{name: "s", typ: tar.TypeSymlink, link: "dir01"},
				tarEntry{name: "dir05/f", body: "v3"},
			)
			for i := range 40 {
				es = append(es, tarEntry{name: fmt.Sprintf("dir%02d/g", (i*7)%(maxUnpackDirs+6)), body: fmt.Sprintf("g%d", i)})
			}
			if _, err := f.ExtractArchive(context.Background(), "dest", bytes.NewReader(makeTar(t, es...)), DefaultArchiveLimits); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for _, e := range es {
				if e.typ == 0 {
					want[e.name] = e.body
				}
			}
			delete(want, "l/x")
			want["tgt/x"] = "lx"
			want["H"] = "a2"
			for name, body := range want {
				if got := readFile(t, filepath.Join(dest, name)); got != body {
					t.Errorf("%s = %q, want %q", name, got, body)
				}
			}
			if fi, err := os.Lstat(filepath.Join(dest, "l")); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("l: %v, %v; want the file replacing the symlink", fi, err)
			}
			if got, err := os.Readlink(filepath.Join(dest, "s")); err != nil || got != "dir01" {
				t.Errorf("s -> %q, %v", got, err)
			}
			if n := journalSize(t, jp); n != 0 {
				t.Errorf("journal after the unpack: %d bytes, want empty", n)
			}
			if tf := tempFiles(t, dest); len(tf) > 0 {
				t.Errorf("temporary files left: %v", tf)
			}
		})
	}
}
