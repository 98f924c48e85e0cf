package files

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// scanRandom writes size random bytes to each of names in a new
// directory and scans it: the directory, the bytes and the scan.
func scanRandom(t *testing.T, size int, names ...string) (string, []byte, *Scan) {
	t.Helper()
	dir := t.TempDir()
	data := make([]byte, size)
	rand.Read(data)
	for _, n := range names {
		must(t, os.WriteFile(filepath.Join(dir, n), data, 0o644))
	}
	s, err := newFS(t, dir).Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	return dir, data, s
}

// ReadChunks gives the chunks' bytes in the order asked; a file that
// shrank or went away since the scan is ErrSourceChanged, and more bytes
// than the limit is ErrTooManyEntries.
func TestReadChunks(t *testing.T) {
	dir, data, s := scanRandom(t, 3<<20, "a.bin", "b.bin")
	var sums []Sum
	var want []byte
	var parts [][]byte
	var off int64
	for _, e := range s.Entries {
		if e.Path != "a.bin" {
			continue
		}
		for _, c := range e.Chunks {
			sums = append(sums, c.Sum)
			want = append(want, data[off:off+int64(c.Size)]...)
			parts = append(parts, data[off:off+int64(c.Size)])
			off += int64(c.Size)
		}
	}
	if len(sums) < 2 {
		t.Fatalf("a.bin has %d chunks, want several", len(sums))
	}
	got, err := s.ReadChunks(nil, sums, len(data))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadChunks: %d bytes, %v; want a.bin's %d", len(got), err, len(want))
	}
	rev := []Sum{sums[len(sums)-1], sums[0]}
	got, err = s.ReadChunks(make([]byte, 0, 8), rev, len(data))
	if wantRev := append(append([]byte{}, parts[len(parts)-1]...), parts[0]...); err != nil || !bytes.Equal(got, wantRev) {
		t.Fatalf("ReadChunks of the last chunk, then the first: %d bytes, %v; want %d", len(got), err, len(wantRev))
	}
	if _, err := s.ReadChunks(nil, sums, len(want)-1); !errors.Is(err, ErrTooManyEntries) {
		t.Fatalf("ReadChunks past its limit: %v, want ErrTooManyEntries", err)
	}
	if err := os.Truncate(filepath.Join(dir, "a.bin"), 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadChunks(nil, sums, len(data)); !errors.Is(err, ErrSourceChanged) {
		t.Fatalf("ReadChunks of a file that shrank: %v, want ErrSourceChanged", err)
	}
	if err := os.Remove(filepath.Join(dir, "a.bin")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadChunks(nil, sums, len(data)); !errors.Is(err, ErrSourceChanged) {
		t.Fatalf("ReadChunks of a file removed: %v, want ErrSourceChanged", err)
	}
}

// SendChunks hands chunks that follow each other in one file as one run
// (one read or sendfile), and a chunk that does not continue the run (a
// gap, another order) as a run of its own.
func TestSendChunksRuns(t *testing.T) {
	_, data, s := scanRandom(t, 2<<20, "a.bin")
	var chunks []Chunk
	for _, e := range s.Entries {
		if e.Path == "a.bin" {
			chunks = e.Chunks
		}
	}
	if len(chunks) < 4 {
		t.Fatalf("a.bin has %d chunks, want 4 or more", len(chunks))
	}
	type run struct{ off, n int64 }
	runs := func(sums ...Sum) []run {
		var out []run
		if err := s.SendChunks(sums, func(_ string, _ *os.File, off, n int64) error {
			out = append(out, run{off, n})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	var all []Sum
	for _, c := range chunks {
		all = append(all, c.Sum)
	}
	if got := runs(all...); len(got) != 1 || got[0] != (run{0, int64(len(data))}) {
		t.Fatalf("every chunk in order: runs %v, want one of the whole file (0, %d)", got, len(data))
	}
	c0, c1 := int64(chunks[0].Size), int64(chunks[1].Size)
	c2, c3 := int64(chunks[2].Size), int64(chunks[3].Size)
	want := []run{{0, c0}, {c0 + c1, c2 + c3}}
	if got := runs(all[0], all[2], all[3]); !slices.Equal(got, want) {
		t.Fatalf("chunks 0, 2, 3: runs %v, want %v", got, want)
	}
	want = []run{{c0, c1}, {0, c0}}
	if got := runs(all[1], all[0]); !slices.Equal(got, want) {
		t.Fatalf("chunks 1, 0: runs %v, want %v", got, want)
	}
}

// A chunk whose file cannot be read since the scan (here a directory now
// stands at its path) fails ReadChunks naming the file as the scan does,
// by its path in the root: the agent's own directories are not in the
// error the control plane is told.
func TestReadChunksErrorNamesPathInRoot(t *testing.T) {
	dir, _, s := scanRandom(t, 64<<10, "a.bin")
	var sums []Sum
	for _, e := range s.Entries {
		for _, c := range e.Chunks {
			sums = append(sums, c.Sum)
		}
	}
	must(t, os.Remove(filepath.Join(dir, "a.bin")))
	must(t, os.Mkdir(filepath.Join(dir, "a.bin"), 0o755))
	_, err := s.ReadChunks(nil, sums, 1<<20)
	if err == nil {
		t.Fatal("ReadChunks of a file that became a directory: no error")
	}
	if strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "a.bin") {
		t.Fatalf("error %q: want the path in the root (a.bin), not %s", err, dir)
	}
}
