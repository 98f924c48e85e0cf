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

// incTree writes a tree shaped like the carry bench's by count (50
// directories of src/assets/blobs, 11,344 files, a symlink each) with
// small files; it returns the files' paths.
func incTree(tb testing.TB, dir string, n int) []string {
	tb.Helper()
	r := rand.New(rand.NewPCG(5, 5))
	var files []string
	subs := []string{"src", "src", "src", "src", "src", "src", "src", "src", "assets", "blobs"}
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("d%02d", i%50), subs[r.IntN(len(subs))])
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		p := filepath.Join(d, fmt.Sprintf("f%05d", i))
		b := make([]byte, 1000+r.IntN(4000))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			tb.Fatal(err)
		}
		files = append(files, p)
	}
	for i := range 50 {
		os.Symlink("src", filepath.Join(dir, fmt.Sprintf("d%02d", i), "link"))
	}
	return files
}

// BenchmarkIncPhases is an incremental carry's agent work on a tree of
// 11,344 files with 113 of them rewritten each time: the source's scan
// while the target surveys, the target's plan, the chunks put, the
// commit (with delete); each phase is reported in ms/op.
func BenchmarkIncPhases(b *testing.B) {
	src, dst := b.TempDir(), b.TempDir()
	files := incTree(b, src, 11344)
	incTree(b, dst, 11344)
	sfs, _ := New(src)
	dfs, _ := New(dst)
	ctx := context.Background()
	// warm both caches
	s, err := sfs.Scan(ctx, ".", ScanOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := dfs.Scan(ctx, ".", ScanOptions{}); err != nil {
		b.Fatal(err)
	}
	// dst made equal to src once (modes and times too), as after a
	// first carry: each round restores the change alone.
	rs, err := dfs.BeginRestore(ctx, ".", s.Entries, RestoreOptions{Delete: true})
	if err != nil {
		b.Fatal(err)
	}
	putEach(b, rs, s, rs.Lack())
	if _, err := rs.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var scanT, survT, planT, putT, commitT time.Duration
	for b.Loop() {
		for range 113 {
			p := files[r.IntN(len(files))]
			d := make([]byte, 1000+r.IntN(4000))
			for j := range d {
				d[j] = byte(r.Uint32())
			}
			os.WriteFile(p, d, 0o644)
		}
		t0 := time.Now()
		sv := dfs.StartSurvey(".")
		s, err = sfs.Scan(ctx, ".", ScanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		<-sv.done
		t2 := time.Now()
		rs, err := dfs.BeginRestore(ctx, ".", s.Entries, RestoreOptions{Delete: true, Survey: sv})
		if err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		putEach(b, rs, s, rs.Lack())
		t4 := time.Now()
		if _, err := rs.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		t5 := time.Now()
		scanT += t1.Sub(t0)
		survT += t2.Sub(t0)
		planT += t3.Sub(t2)
		putT += t4.Sub(t3)
		commitT += t5.Sub(t4)
	}
	n := float64(b.N)
	b.ReportMetric(float64(scanT.Microseconds())/n/1000, "scan-ms")
	b.ReportMetric(float64(survT.Microseconds())/n/1000, "survey-ms")
	b.ReportMetric(float64(planT.Microseconds())/n/1000, "plan-ms")
	b.ReportMetric(float64(putT.Microseconds())/n/1000, "put-ms")
	b.ReportMetric(float64(commitT.Microseconds())/n/1000, "commit-ms")
}

// BenchmarkScanWarm is the scan of an unchanged tree of 11,344 files
// whose chunks the cache knows: the walk alone (an incremental carry's
// scan on its source).
func BenchmarkScanWarm(b *testing.B) {
	src := b.TempDir()
	incTree(b, src, 11344)
	f, err := New(src)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	if _, err := f.Scan(ctx, ".", ScanOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	defer func() { reportCPU(b, cpu0) }()
	for b.Loop() {
		if _, err := f.Scan(ctx, ".", ScanOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// incPair makes two like trees of 11,344 files (incTree) and an FS on
// each, closed when b ends: a carry's source and target.
func incPair(b *testing.B) (src, dst *FS) {
	b.Helper()
	var fss [2]*FS
	for i := range fss {
		dir := b.TempDir()
		incTree(b, dir, 11344)
		f, err := New(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		fss[i] = f
	}
	return fss[0], fss[1]
}

// BenchmarkScanBesideSurvey is BenchmarkScanWarm while another FS
// surveys a tree of the same size, as a carry's target does in the same
// process in the carry bench: ns/op is the scan's.
func BenchmarkScanBesideSurvey(b *testing.B) {
	f, g := incPair(b)
	ctx := context.Background()
	if _, err := f.Scan(ctx, ".", ScanOptions{}); err != nil {
		b.Fatal(err)
	}
	var scanT time.Duration
	for b.Loop() {
		t0 := time.Now()
		sv := g.StartSurvey(".")
		if _, err := f.Scan(ctx, ".", ScanOptions{}); err != nil {
			b.Fatal(err)
		}
		scanT += time.Since(t0)
		<-sv.done
	}
	b.ReportMetric(float64(scanT.Microseconds())/float64(b.N)/1000, "scan-ms")
}

// BenchmarkPlanSurveyed is a restore's plan (BeginRestore) of an
// unchanged tree of 11,344 files onto a copy its survey has listed and
// its chunk cache knows: an incremental carry's plan on its target.
func BenchmarkPlanSurveyed(b *testing.B) {
	f, g := incPair(b)
	ctx := context.Background()
	s, err := f.Scan(ctx, ".", ScanOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := g.Scan(ctx, ".", ScanOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	defer func() { reportCPU(b, cpu0) }()
	for b.Loop() {
		b.StopTimer()
		sv := g.StartSurvey(".")
		<-sv.done
		b.StartTimer()
		r, err := g.BeginRestore(ctx, ".", s.Entries, RestoreOptions{Delete: true, Survey: sv})
		if err != nil {
			b.Fatal(err)
		}
		r.Abort()
	}
}
