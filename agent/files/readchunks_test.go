package files

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// ReadChunks gives the chunks' bytes in the order asked; a file that
// shrank or went away since the scan is ErrSourceChanged, and more bytes
// than the limit is ErrTooManyEntries.
func TestReadChunks(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 3<<20)
	rand.Read(data)
	for _, n := range []string{"a.bin", "b.bin"} {
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Scan(context.Background(), ".", ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
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
