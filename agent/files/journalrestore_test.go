package files

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// journalTree writes n small text files over a few directories and, when
// big, three random files of several chunks each (the last ones in the
// manifest's order); it returns their paths.
func journalTree(t *testing.T, dir string, n int, big bool) (small, large []string) {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	for i := range n {
		p := fmt.Sprintf("d%d/f%04d.txt", i%7, i)
		must(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, p), fmt.Appendf(nil, "file %d %d\n", i, r.Uint64()), 0o644))
		small = append(small, p)
	}
	if big {
		for i := range 3 {
			data := make([]byte, 1<<20)
			for j := range data {
				data[j] = byte(r.Uint32())
			}
			p := fmt.Sprintf("z/big%d.bin", i)
			must(t, os.MkdirAll(filepath.Join(dir, "z"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, p), data, 0o600))
			large = append(large, p)
		}
	}
	return small, large
}

// journaledFS is an FS on a new directory with a journal, and the
// journal's path.
func journaledFS(t *testing.T) (*FS, string, string) {
	t.Helper()
	dir := t.TempDir()
	f := newFS(t, dir)
	jp := filepath.Join(t.TempDir(), "writes")
	if _, err := f.OpenJournal(jp); err != nil {
		t.Fatal(err)
	}
	return f, dir, jp
}

func journalSize(t *testing.T, jp string) int64 {
	t.Helper()
	fi, err := os.Stat(jp)
	must(t, err)
	return fi.Size()
}

// TestRestoreJournalSyncs: a restore records its temporary files in the
// journal with one sync per batch of names, not one per file: as many
// syncs for 600 files as for 30, and few with small batches; a journal
// past its compaction size is not rewritten (and synced) at each file the
// batch finishes. Each leaves the tree right and the journal empty.
func TestRestoreJournalSyncs(t *testing.T) {
	for _, tc := range []struct {
		files, batch, maxSyncs int
		compactAt              int64
	}{
		{30, 0, 1, 0},
		{600, 0, 1, 0},
		{600, 0, 1, 1 << 10},
		{600, 4 << 10, 30, 0}, // ~40 KiB of names: about ten batches (and a compaction or so)
	} {
		t.Run(fmt.Sprintf("%d files, batch %d, compact at %d", tc.files, tc.batch, tc.compactAt), func(t *testing.T) {
			if tc.batch > 0 {
				old := reserveBytes
				reserveBytes = tc.batch
				t.Cleanup(func() { reserveBytes = old })
			}
			if tc.compactAt > 0 {
				old := journalCompactAt
				journalCompactAt = tc.compactAt
				t.Cleanup(func() { journalCompactAt = old })
			}
			src := t.TempDir()
			journalTree(t, src, tc.files, false)
			s, err := newFS(t, src).Scan(context.Background(), ".", ScanOptions{})
			must(t, err)
			dst, dir, jp := journaledFS(t)
			res, _ := restoreFrom(t, s, dst, RestoreOptions{})
			if res.Written != tc.files {
				t.Fatalf("wrote %d files, want %d", res.Written, tc.files)
			}
			syncs := dst.journalOf().syncCount()
			t.Logf("%d files: %d journal syncs", tc.files, syncs)
			if syncs < 1 || syncs > tc.maxSyncs {
				t.Errorf("%d files restored with %d journal syncs, want 1 to %d", tc.files, syncs, tc.maxSyncs)
			}
			if got, want := digest(t, dir), digest(t, src); !mapsEqual(got, want) {
				t.Errorf("restored tree differs from the source")
			}
			if n := journalSize(t, jp); n != 0 {
				t.Errorf("journal after the restore: %d bytes, want empty", n)
			}
			if tmp := tempFiles(t, dir); len(tmp) > 0 {
				t.Errorf("temporary files left: %v", tmp)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// TestRestoreKilledSweeps: a restore abandoned midway (an agent killed:
// neither Commit nor Abort) with files half written, and files whose
// reserved names were never used, leaves temporary files that the next
// start's OpenJournal removes, every one; each restored file is then
// absent or whole.
func TestRestoreKilledSweeps(t *testing.T) {
	src := t.TempDir()
	small, large := journalTree(t, src, 40, true)
	s, err := newFS(t, src).Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	dst, dir, jp := journaledFS(t)
	r, err := dst.BeginRestore(context.Background(), ".", s.Entries, RestoreOptions{})
	must(t, err)
	// Withhold each large file's last chunk (so it stays half written)
	// and every small file's of an odd number (never opened).
	withheld := map[Sum]bool{}
	for _, e := range s.Entries {
		if e.Type != TypeFile {
			continue
		}
		var i int
		if slices.Contains(large, e.Path) {
			if len(e.Chunks) < 2 {
				t.Fatalf("%s has %d chunks, want several", e.Path, len(e.Chunks))
			}
			withheld[e.Chunks[len(e.Chunks)-1].Sum] = true
		} else if _, err := fmt.Sscanf(filepath.Base(e.Path), "f%04d.txt", &i); err == nil && i%2 == 1 {
			withheld[e.Chunks[0].Sum] = true
		}
	}
	for _, sum := range r.Lack() {
		if withheld[sum] {
			continue
		}
		data, err := s.AppendChunk(nil, sum)
		must(t, err)
		must(t, r.Put(sum, data))
	}
	// The kill: the restore is dropped, its files' handles closed.
	crashRestore(r)
	must(t, dst.Close())

	left := tempFiles(t, dir)
	if len(left) != len(large) {
		t.Fatalf("%d temporary files after the kill, want %d (the large files half written): %v", len(left), len(large), left)
	}
	live, err := readJournal(jp)
	must(t, err)
	if len(live) < len(large)+len(small)/2 {
		t.Errorf("journal lists %d names, want at least the %d files not finished", len(live), len(large)+len(small)/2)
	}
	fs2 := newFS(t, dir)
	removed, err := fs2.OpenJournal(jp)
	must(t, err)
	if len(removed) != len(large) {
		t.Errorf("the sweep removed %v, want the %d temporary files", removed, len(large))
	}
	if tmp := tempFiles(t, dir); len(tmp) > 0 {
		t.Errorf("temporary files left after the sweep: %v", tmp)
	}
	want := digest(t, src)
	for p, d := range digest(t, dir) {
		if w, ok := want[p]; !ok || w != d {
			t.Errorf("%s after the kill and sweep: %q, want %q", p, d, w)
		}
	}
	if n := journalSize(t, jp); n != 0 {
		t.Errorf("journal after the sweep: %d bytes, want empty", n)
	}
}

// TestRestoreReservedNameTaken: a reserved temporary name that exists
// when its file is opened (someone else's file) is left alone: the file
// is written through a fresh name, the other file is neither used nor
// removed, and the journal no longer lists it.
func TestRestoreReservedNameTaken(t *testing.T) {
	src := t.TempDir()
	journalTree(t, src, 10, false)
	s, err := newFS(t, src).Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	dst, dir, jp := journaledFS(t)
	ctx := context.Background()
	r, err := dst.BeginRestore(ctx, ".", s.Entries, RestoreOptions{})
	must(t, err)
	// Reserve the batch as the first open would, then take every name.
	first := r.files[0]
	first.tmp = r.reserve(first)
	var planted []string
	for _, rf := range r.files {
		if rf.tmp == "" {
			t.Fatalf("%s has no reserved name", rf.c)
		}
		p := filepath.Join(dir, filepath.FromSlash(rf.tmp))
		mustWrite(t, p, "someone else's")
		planted = append(planted, p)
	}
	putEach(t, r, s, r.Lack())
	res, err := r.Commit(ctx)
	must(t, err)
	if res.Written != len(r.files) {
		t.Errorf("wrote %d files, want %d", res.Written, len(r.files))
	}
	want := digest(t, src)
	got := digest(t, dir)
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s = %q, want %q", p, got[p], w)
		}
	}
	for _, p := range planted {
		if readFile(t, p) != "someone else's" {
			t.Errorf("%s changed", p)
		}
	}
	if n := journalSize(t, jp); n != 0 {
		t.Errorf("journal after the restore: %d bytes, want empty", n)
	}
	must(t, dst.Close())
	removed, err := newFS(t, dir).OpenJournal(jp)
	must(t, err)
	if len(removed) > 0 {
		t.Errorf("the sweep removed %v, want nothing (the planted files are not the agent's)", removed)
	}
	if tmp := tempFiles(t, dir); len(tmp) != len(planted) {
		t.Errorf("temporary files after the sweep: %v, want the %d planted", tmp, len(planted))
	}
}

// TestRestoreAbortForgetsReserved: an aborted restore forgets the names
// it reserved and did not use: the journal is empty again.
func TestRestoreAbortForgetsReserved(t *testing.T) {
	src := t.TempDir()
	journalTree(t, src, 20, false)
	s, err := newFS(t, src).Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	dst, dir, jp := journaledFS(t)
	r, err := dst.BeginRestore(context.Background(), ".", s.Entries, RestoreOptions{})
	must(t, err)
	sum := r.Lack()[0]
	data, err := s.AppendChunk(nil, sum)
	must(t, err)
	must(t, r.Put(sum, data))
	if journalSize(t, jp) == 0 {
		t.Fatal("journal empty while the restore runs")
	}
	r.Abort()
	if n := journalSize(t, jp); n != 0 {
		t.Errorf("journal after Abort: %d bytes, want empty", n)
	}
	if tmp := tempFiles(t, dir); len(tmp) > 0 {
		t.Errorf("temporary files after Abort: %v", tmp)
	}
}

// TestRestoreReserveBounded: a file opened far out of order (its chunk is
// an earlier file's too) does not stretch a batch of reserved names to
// it: the journal holds about one batch, not the names of the whole
// tree, and the restore is right.
func TestRestoreReserveBounded(t *testing.T) {
	old := reserveBytes
	reserveBytes = 1 << 10
	t.Cleanup(func() { reserveBytes = old })
	src := t.TempDir()
	small, _ := journalTree(t, src, 300, false)
	// The last file is the first's twin: the first chunk opens both.
	data, err := os.ReadFile(filepath.Join(src, small[0]))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(src, "zz-twin.txt"), data, 0o644))
	s, err := newFS(t, src).Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	dst, dir, jp := journaledFS(t)
	ctx := context.Background()
	r, err := dst.BeginRestore(ctx, ".", s.Entries, RestoreOptions{})
	must(t, err)
	if last := r.files[len(r.files)-1]; last.c != "zz-twin.txt" {
		t.Fatalf("last file is %s, want the twin", last.c)
	}
	first := r.Lack()[0]
	chunk, err := s.AppendChunk(nil, first)
	must(t, err)
	must(t, r.Put(first, chunk))
	if n := journalSize(t, jp); n > int64(reserveBytes)+2<<10 {
		t.Errorf("journal after the first chunk: %d bytes, want about one batch (%d)", n, reserveBytes)
	}
	putEach(t, r, s, r.Lack()[1:])
	_, err = r.Commit(ctx)
	must(t, err)
	if got, want := digest(t, dir), digest(t, src); !mapsEqual(got, want) {
		t.Errorf("restored tree differs from the source")
	}
	if n := journalSize(t, jp); n != 0 {
		t.Errorf("journal after the restore: %d bytes, want empty", n)
	}
}
