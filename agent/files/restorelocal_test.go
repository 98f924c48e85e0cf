package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// A file whose old version, which the restore copies chunks from, is
// changed on the target before the file is begun: the write of the chunk
// that begins it fails (the local chunks no longer match), and delivered
// again the chunk does not complete the file with holes where the local
// chunks go. The file is old or new, never a mix with zeros, and the
// commit refuses a restore that could not write it.
func TestRestoreLocalChunkChangedLeavesNoHole(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	block := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	head, oldTail, newTail := block(1<<20), block(1<<20), block(1<<20)
	srcDir, dstDir := t.TempDir(), t.TempDir()
	newContent := append(append([]byte{}, head...), newTail...)
	must(t, os.WriteFile(filepath.Join(srcDir, "f.bin"), newContent, 0o644))
	must(t, os.WriteFile(filepath.Join(dstDir, "f.bin"), append(append([]byte{}, head...), oldTail...), 0o644))
	src, dst := newFS(t, srcDir), newFS(t, dstDir)
	ctx := context.Background()
	s, err := src.Scan(ctx, ".", ScanOptions{})
	must(t, err)
	rs, err := dst.BeginRestore(ctx, ".", s.Entries, RestoreOptions{})
	must(t, err)
	lack := rs.Lack()
	if len(lack) == 0 || len(lack) >= len(s.Entries[0].Chunks) {
		t.Fatalf("%d chunks lacking of %d: want some, not all (the head is local)", len(lack), len(s.Entries[0].Chunks))
	}
	// A process on the target rewrites the head of the old file.
	changed := append(block(1<<20), oldTail...)
	must(t, os.WriteFile(filepath.Join(dstDir, "f.bin"), changed, 0o644))
	if err := putAllOf(t, rs, s, lack); err == nil {
		t.Fatalf("PutAll with the local chunks changed succeeded")
	}
	err = putAllOf(t, rs, s, lack) // delivered again, as a retried request does
	res, cerr := rs.Commit(ctx)
	t.Logf("second PutAll: %v; commit: %+v, %v", err, res, cerr)
	if ents, err := os.ReadDir(dstDir); err != nil || len(ents) != 1 {
		t.Errorf("the target after the restore ended holds %v (%v), want only f.bin (no temporary file left)", ents, err)
	}
	got, rerr := os.ReadFile(filepath.Join(dstDir, "f.bin"))
	must(t, rerr)
	switch {
	case bytes.Equal(got, changed):
		if cerr == nil {
			t.Errorf("the commit succeeded and f.bin is its old content")
		}
	case bytes.Equal(got, newContent):
	default:
		zeros := bytes.Count(got[:1<<20], []byte{0})
		t.Errorf("f.bin after the restore: %d bytes, sha256 %x, neither old nor new (%d zero bytes in its first MiB); commit: %v",
			len(got), sha256.Sum256(got), zeros, cerr)
	}
}
