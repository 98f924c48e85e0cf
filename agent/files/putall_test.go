package files

import (
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// PutAll of every lacking chunk at once, in batches, in the order of the
// restore's Lack and out of it, with chunks no file wants and chunks two
// files share among them, restores the tree exactly; a batch with a size
// the manifest does not have is refused before any of it is written.
func TestRestorePutAll(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src)
	r := rand.New(rand.NewPCG(3, 4))
	shared := make([]byte, 1<<20)
	for i := range shared {
		shared[i] = byte(r.Uint32())
	}
	must(t, os.WriteFile(filepath.Join(src, "src/one.bin"), shared, 0o644))
	must(t, os.WriteFile(filepath.Join(src, "two.bin"), append(append([]byte{}, shared...), "tail"...), 0o640))
	sf, err := New(src)
	must(t, err)
	s, err := sf.Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	for _, order := range []string{"lack", "reversed", "pairs"} {
		t.Run(order, func(t *testing.T) {
			dst := t.TempDir()
			df, err := New(dst)
			must(t, err)
			ctx := context.Background()
			rs, err := df.BeginRestore(ctx, ".", s.Entries, RestoreOptions{})
			must(t, err)
			lack := append([]Sum{}, rs.Lack()...)
			if order == "reversed" {
				for i, j := 0, len(lack)-1; i < j; i, j = i+1, j-1 {
					lack[i], lack[j] = lack[j], lack[i]
				}
			}
			// A chunk nobody wants rides along: ignored.
			stray := []byte("not in the manifest")
			batches := [][]Sum{lack}
			if order == "pairs" {
				batches = nil
				for i := 0; i < len(lack); i += 2 {
					batches = append(batches, lack[i:min(i+2, len(lack))])
				}
			}
			for bi, b := range batches {
				sums := append([]Sum{}, b...)
				sizes, data := batchOf(t, s, b)
				if bi == 0 {
					bad := append([]uint32{}, sizes...)
					bad[0]++
					if err := rs.PutAll(sums, bad, append(append([]byte{}, data...), 0)); !errors.Is(err, ErrChecksumMismatch) {
						t.Fatalf("PutAll with a wrong size: %v, want ErrChecksumMismatch", err)
					}
					sums = append(sums, Sum(sha256.Sum256(stray)))
					sizes = append(sizes, uint32(len(stray)))
					data = append(data, stray...)
				}
				must(t, rs.PutAll(sums, sizes, data))
			}
			res, err := rs.Commit(ctx)
			must(t, err)
			if res.Written != res.Files {
				t.Fatalf("wrote %d of %d files", res.Written, res.Files)
			}
			want, got := digest(t, src), digest(t, dst)
			for p, d := range want {
				if p != "." && got[p] != d {
					t.Errorf("%s: %q, want %q", p, got[p], d)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d entries restored, want %d", len(got), len(want))
			}
		})
	}
}

// A manifest that gives one chunk two sizes (a.bin has x as 10 bytes,
// b.bin as 5, then y) is refused when x comes: written at b.bin's offset,
// its 10 bytes would overwrite the start of y there (or go past b.bin's
// end), and b.bin would be committed with content the manifest does not
// describe.
func TestRestorePutAllChunkSizes(t *testing.T) {
	x, y := []byte("0123456789"), []byte("yyyyyyyyyyyy")
	sx, sy := Sum(sha256.Sum256(x)), Sum(sha256.Sum256(y))
	entries := []SnapEntry{
		{Path: "a.bin", Type: TypeFile, Mode: 0o644, Size: 10, Chunks: []Chunk{{Sum: sx, Size: 10}}},
		{Path: "b.bin", Type: TypeFile, Mode: 0o644, Size: 5 + 12, Chunks: []Chunk{{Sum: sx, Size: 5}, {Sum: sy, Size: 12}}},
	}
	dst := t.TempDir()
	df, err := New(dst)
	must(t, err)
	defer df.Close()
	ctx := context.Background()
	rs, err := df.BeginRestore(ctx, ".", entries, RestoreOptions{})
	if err != nil {
		return // refused at once: as good
	}
	defer rs.Abort()
	must(t, rs.Put(sy, y))
	if err := rs.Put(sx, x); !errors.Is(err, ErrChecksumMismatch) {
		b, _ := os.ReadFile(filepath.Join(dst, "b.bin"))
		t.Fatalf("a chunk the manifest gives two sizes: Put %v, b.bin %q; want ErrChecksumMismatch", err, b)
	}
}

// A write of a restore's chunks that fails leaves those chunks wanted:
// the restore cannot be committed without them (never with a hole where
// they go), and delivered again they complete it exactly.
func TestRestorePutAllFailedWriteKeepsChunksWanted(t *testing.T) {
	_, big, s := scanRandom(t, 1<<20, "big.bin")
	for _, retry := range []bool{false, true} {
		dst := t.TempDir()
		ctx := context.Background()
		rs, err := newFS(t, dst).BeginRestore(ctx, ".", s.Entries, RestoreOptions{})
		must(t, err)
		lack := rs.Lack()
		if len(lack) < 3 {
			t.Fatalf("big.bin has %d chunks, want at least 3", len(lack))
		}
		// The first chunk's write fails once; the others go in.
		failed := errors.New("injected write failure")
		placeHook = func(string) error { placeHook = nil; return failed }
		err = putAllOf(t, rs, s, lack[:1])
		placeHook = nil
		if !errors.Is(err, failed) {
			t.Fatalf("PutAll with a failing write = %v, want the failure", err)
		}
		must(t, putAllOf(t, rs, s, lack[1:]))
		if retry {
			must(t, putAllOf(t, rs, s, lack[:1]))
		}
		_, err = rs.Commit(ctx)
		got, rerr := os.ReadFile(filepath.Join(dst, "big.bin"))
		switch {
		case !retry && err == nil:
			t.Errorf("Commit without the chunk whose write failed succeeded; big.bin equal to the source: %v", rerr == nil && sha256.Sum256(got) == sha256.Sum256(big))
		case !retry && rerr == nil:
			t.Errorf("big.bin written by a restore that failed (%v)", err)
		case retry && err != nil:
			t.Errorf("Commit after the chunk was delivered again: %v", err)
		case retry && (rerr != nil || sha256.Sum256(got) != sha256.Sum256(big)):
			t.Errorf("big.bin after the chunk was delivered again: %d bytes, %v; not the source's", len(got), rerr)
		}
	}
}

// batchOf is the sizes and data of chunks sums of s, one after the
// other, as PutAll takes them.
func batchOf(t *testing.T, s *Scan, sums []Sum) (sizes []uint32, data []byte) {
	t.Helper()
	for _, sum := range sums {
		c, err := s.AppendChunk(nil, sum)
		must(t, err)
		data = append(data, c...)
		sizes = append(sizes, uint32(len(c)))
	}
	return sizes, data
}

// putAllOf delivers chunks sums of s to r with one PutAll.
func putAllOf(t *testing.T, r *Restore, s *Scan, sums []Sum) error {
	t.Helper()
	sizes, data := batchOf(t, s, sums)
	return r.PutAll(sums, sizes, data)
}

// putEach delivers chunks sums of s to r, one Put each.
func putEach(t testing.TB, r *Restore, s *Scan, sums []Sum) {
	t.Helper()
	for _, sum := range sums {
		data, err := s.AppendChunk(nil, sum)
		must(t, err)
		must(t, r.Put(sum, data))
	}
}
