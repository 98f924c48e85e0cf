package files

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchTree writes a tree like the carry bench's, scaled down: many small
// text files and a few large random ones, in a few directories. It
// returns the bytes written.
func benchTree(b *testing.B, dir string) int64 {
	b.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	var size int64
	for i := range 1000 {
		d := filepath.Join(dir, fmt.Sprintf("d%02d", i%20), "src")
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		data := make([]byte, 2000+r.IntN(16000))
		for j := range data {
			data[j] = "abcdefgh \n"[r.IntN(10)]
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%04d", i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
		size += int64(len(data))
	}
	for i := range 8 {
		data := make([]byte, 1<<20+r.IntN(1<<20))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("d%02d", i), fmt.Sprintf("blob%d", i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
		size += int64(len(data))
	}
	return size
}

// reportCPU reports the process's CPU time per op since cpu0 (the time
// in ns/op depends on the machine's load and its disk; this less so).
// The untimed parts of a loop count too: keep them small.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	if cpu := processCPU() - cpu0; cpu > 0 && b.N > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkScan is a snapshot's scan of a tree no FS has seen (each
// iteration opens a new FS: the chunk cache starts empty).
func BenchmarkScan(b *testing.B) {
	dir := b.TempDir()
	size := benchTree(b, dir)
	b.SetBytes(size)
	b.ReportAllocs()
	cpu0 := processCPU()
	defer func() { reportCPU(b, cpu0) }()
	for b.Loop() {
		f, err := New(dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Scan(context.Background(), ".", ScanOptions{}); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkRestoreEmpty is a restore of that tree to an empty directory,
// every chunk delivered by Put (as a first carry does). Each iteration
// restores to a new directory; they are removed at the end.
func BenchmarkRestoreEmpty(b *testing.B) { benchRestore(b, false) }

// BenchmarkRestoreEmptyJournal is BenchmarkRestoreEmpty with the journal
// of temporary files an agent keeps (outpost agent's Journal): the
// temporary files' names are recorded and synced before the files are
// made, in batches (journal-syncs/op counts the syncs).
func BenchmarkRestoreEmptyJournal(b *testing.B) { benchRestore(b, true) }

func benchRestore(b *testing.B, journal bool) {
	src := b.TempDir()
	size := benchTree(b, src)
	sfs, err := New(src)
	if err != nil {
		b.Fatal(err)
	}
	defer sfs.Close()
	s, err := sfs.Scan(context.Background(), ".", ScanOptions{})
	if err != nil {
		b.Fatal(err)
	}
	data := map[Sum][]byte{}
	for _, e := range s.Entries {
		for _, ch := range e.Chunks {
			if data[ch.Sum] == nil {
				if data[ch.Sum], err = s.AppendChunk(nil, ch.Sum); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	dst := b.TempDir()
	dfs, err := New(dst)
	if err != nil {
		b.Fatal(err)
	}
	defer dfs.Close()
	if journal {
		if _, err := dfs.OpenJournal(filepath.Join(b.TempDir(), "writes")); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.SetBytes(size)
	b.ReportAllocs()
	cpu0 := processCPU()
	defer func() { reportCPU(b, cpu0) }()
	i := 0
	for b.Loop() {
		i++
		p := fmt.Sprintf("r%d", i)
		r, err := dfs.BeginRestore(ctx, p, s.Entries, RestoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, sum := range r.Lack() {
			if err := r.Put(sum, data[sum]); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := r.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if j := dfs.journalOf(); j != nil && b.N > 0 {
		b.ReportMetric(float64(j.syncCount())/float64(b.N), "journal-syncs/op")
	}
}
