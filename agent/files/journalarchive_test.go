package files

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestExtractArchiveJournalSyncs: an unpack records its small files'
// temporary names in the journal a batch at a time, one sync per batch,
// not one per file (600 syncs for 600 files before); the tree is right,
// and the journal empty with no temporary file left.
func TestExtractArchiveJournalSyncs(t *testing.T) {
	for _, tc := range []struct {
		files, batch, maxSyncs int
	}{
		{600, 0, 3}, // batches of 256
		{600, 16, 38},
		{3, 0, 1},
	} {
		t.Run(fmt.Sprintf("%d files, batch %d", tc.files, tc.batch), func(t *testing.T) {
			if tc.batch > 0 {
				old := maxPendingFiles
				maxPendingFiles = tc.batch
				t.Cleanup(func() { maxPendingFiles = old })
			}
			var es []tarEntry
			for i := range tc.files {
				es = append(es, tarEntry{name: fmt.Sprintf("d%d/f%04d", i%7, i), body: fmt.Sprintf("file %d\n", i)})
			}
			f, dir, jp := journaledFS(t)
			res, err := f.ExtractArchive(context.Background(), "dest", bytes.NewReader(makeTar(t, es...)), DefaultArchiveLimits)
			if err != nil {
				t.Fatal(err)
			}
			if res.Files != tc.files {
				t.Fatalf("unpacked %d files, want %d", res.Files, tc.files)
			}
			for i := range tc.files {
				if got, want := readFile(t, filepath.Join(dir, "dest", fmt.Sprintf("d%d/f%04d", i%7, i))), fmt.Sprintf("file %d\n", i); got != want {
					t.Fatalf("file %d = %q, want %q", i, got, want)
				}
			}
			syncs := f.journalOf().syncCount()
			t.Logf("%d files: %d journal syncs", tc.files, syncs)
			if syncs < 1 || syncs > tc.maxSyncs {
				t.Errorf("%d files unpacked with %d journal syncs, want 1 to %d", tc.files, syncs, tc.maxSyncs)
			}
			if n := journalSize(t, jp); n != 0 {
				t.Errorf("journal after the unpack: %d bytes, want empty", n)
			}
			for d := range 7 {
				if tf := tempFiles(t, filepath.Join(dir, "dest", fmt.Sprintf("d%d", d))); len(tf) > 0 {
					t.Errorf("temporary files left: %v", tf)
				}
			}
		})
	}
}

// TestExtractArchiveFailsWithJournal: an unpack that ends with an error
// (an unsafe entry after small files still waiting for their batch; a
// directory in the way of a file whose name the batch recorded) leaves
// the files before it in place and an empty journal: no recorded name
// stays behind for the next start to sweep.
func TestExtractArchiveFailsWithJournal(t *testing.T) {
	small := func(n int) []tarEntry {
		var es []tarEntry
		for i := range n {
			es = append(es, tarEntry{name: fmt.Sprintf("f%02d", i), body: fmt.Sprintf("small %d", i)})
		}
		return es
	}
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		before  int // files that must be in place
		prepare func(t *testing.T, dest string)
		want    error
	}{
		{"unsafe entry after pending files", append(small(10), tarEntry{name: "../escape", body: "x"}), 10, nil, ErrUnsafeEntry},
		{"symlink out after pending files", append(small(10), tarEntry{name: "out", typ: tar.TypeSymlink, link: "../../x"}), 10, nil, ErrUnsafeEntry},
		{"directory in the way", small(20), 5, func(t *testing.T, dest string) {
			must(t, os.MkdirAll(filepath.Join(dest, "f05", "sub"), 0o755))
		}, iofs.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, dir, jp := journaledFS(t)
			dest := filepath.Join(dir, "dest")
			must(t, os.MkdirAll(dest, 0o755))
			if tc.prepare != nil {
				tc.prepare(t, dest)
			}
			_, err := f.ExtractArchive(context.Background(), "dest", bytes.NewReader(makeTar(t, tc.entries...)), DefaultArchiveLimits)
			if !errors.Is(err, tc.want) {
				t.Fatalf("unpack: %v, want %v", err, tc.want)
			}
			for i := range tc.before {
				if got, want := readFile(t, filepath.Join(dest, fmt.Sprintf("f%02d", i))), fmt.Sprintf("small %d", i); got != want {
					t.Errorf("file %d before the failure = %q, want %q", i, got, want)
				}
			}
			if n := journalSize(t, jp); n != 0 {
				b, _ := os.ReadFile(jp)
				t.Errorf("journal after the failed unpack: %d bytes, want empty:\n%s", n, b)
			}
			if tf := tempFiles(t, dest); len(tf) > 0 {
				t.Errorf("temporary files left: %v", tf)
			}
		})
	}
}
