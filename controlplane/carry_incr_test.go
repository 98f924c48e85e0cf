package controlplane

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// pageWatch is a real agent's target that counts the snap.manifest calls
// under way at once: the first waits (at most overlapWait) for a second
// to begin, so that pages asked for one after the other show as never
// more than one at once.
type pageWatch struct {
	target
	mu       sync.Mutex
	now, max int
	calls    int
	second   chan struct{}
}

const overlapWait = 5 * time.Second

func (p *pageWatch) Concurrent() target { return p }

func (p *pageWatch) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	if op != wire.OpSnapManifest {
		return p.target.Concurrent().Call(ctx, op, body, out, opts)
	}
	p.mu.Lock()
	p.calls++
	n := p.calls
	p.now++
	p.max = max(p.max, p.now)
	if n == 2 {
		close(p.second)
	}
	p.mu.Unlock()
	if n == 1 {
		select {
		case <-p.second:
		case <-time.After(overlapWait):
		}
	}
	err := p.target.Concurrent().Call(ctx, op, body, out, opts)
	p.mu.Lock()
	p.now--
	p.mu.Unlock()
	return err
}

// A manifest of several pages is asked for several pages at once (the
// scan says where they begin), and arrives whole and in order: the carry
// restores the tree exactly.
func TestCarryManifestPagesAtOnce(t *testing.T) {
	e := newSnapEnv(t, testConfig(t))
	// ~12,000 entries: about 1.1 MB of manifest as the agent counts it,
	// three pages.
	for i := range 12000 {
		writeFile(t, filepath.Join(e.laptopDir, fmt.Sprintf("d%02d/some/longer/name/file-%05d.txt", i%40, i)), fmt.Sprintf("content %d\n", i), 0o644)
	}
	src := &pageWatch{target: agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "laptop"}}, second: make(chan struct{})}
	dst := agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "cloud"}}
	sn, res, err := e.s.snapshotOnto(context.Background(), src, snapshotSpec{ws: "w1", agent: "laptop", session: "s1", kind: snapCarry}, dst)
	if err != nil {
		t.Fatal(err)
	}
	if src.calls < 3 {
		t.Fatalf("the manifest came in %d pages; the test wants 3 or more", src.calls)
	}
	if src.max < 2 {
		t.Fatalf("at most %d of the manifest's %d pages were asked for at once; want them asked for together", src.max, src.calls)
	}
	if sn.Files != 12000 || res.Files != 12000 {
		t.Fatalf("snapshot of %d files, restore of %d; want 12000", sn.Files, res.Files)
	}
	sameTree(t, e.laptopDir, e.cloudDir)
}

// The control plane uses the agent's page starts only when they make
// sense; otherwise it pages by each page's next offset.
func TestPageStarts(t *testing.T) {
	for _, c := range []struct {
		pages []int
		n     int
		want  []int
	}{
		{nil, 10, nil},
		{[]int{4, 8}, 10, []int{0, 4, 8}},
		{[]int{0, 4}, 10, nil},
		{[]int{4, 4}, 10, nil},
		{[]int{6, 4}, 10, nil},
		{[]int{4, 10}, 10, nil},
		{[]int{-1}, 10, nil},
	} {
		got := pageStarts(wire.SnapScanResult{Entries: c.n, Pages: c.pages})
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("pageStarts(%v of %d) = %v, want %v", c.pages, c.n, got, c.want)
		}
	}
}

// opCount is a real agent's target that counts the calls of each op.
type opCount struct {
	target
	mu    sync.Mutex
	calls map[string]int
}

func (c *opCount) Concurrent() target { return c }

func (c *opCount) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	c.mu.Lock()
	c.calls[op]++
	c.mu.Unlock()
	return c.target.Concurrent().Call(ctx, op, body, out, opts)
}

// A restore that lacks few chunks gets their names with its plan, and
// the carry asks for no lack page; one that lacks more than the plan
// carries pages them as before. Both restore the tree exactly.
func TestCarryLackWithPlan(t *testing.T) {
	for _, c := range []struct {
		name   string
		files  int
		paging bool
	}{{"few chunks", 40, false}, {"many chunks", 700, true}} {
		t.Run(c.name, func(t *testing.T) {
			e := newSnapEnv(t, testConfig(t))
			for i := range c.files {
				writeFile(t, filepath.Join(e.laptopDir, fmt.Sprintf("d%d/f%04d", i%7, i)), fmt.Sprintf("distinct content %d\n", i), 0o644)
			}
			src := agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "laptop"}}
			dst := &opCount{target: agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "cloud"}}, calls: map[string]int{}}
			_, res, err := e.s.snapshotOnto(context.Background(), src, snapshotSpec{ws: "w1", agent: "laptop", session: "s1", kind: snapCarry}, dst)
			if err != nil {
				t.Fatal(err)
			}
			if res.Files != c.files {
				t.Fatalf("restored %d files, want %d", res.Files, c.files)
			}
			if lackCalls := dst.calls[wire.OpSnapRestoreLack]; (lackCalls > 0) != c.paging {
				t.Fatalf("%d lack pages asked for with %d chunks lacking; want paging %v", lackCalls, c.files, c.paging)
			}
			sameTree(t, e.laptopDir, e.cloudDir)
		})
	}
}

// The names a restore lacks get their sizes from the tally's chunks
// (those the store lacked) and, for content the store had, from the
// manifest; a name the manifest lacks is a bad reply.
func TestSizedRefs(t *testing.T) {
	sum := func(b byte) []byte { s := make([]byte, wire.SumSize); s[0] = b; return s }
	entries := []wire.SnapEntry{
		{Path: "a", Type: "file", Size: 30, Sums: append(sum(1), sum(2)...), Sizes: []uint32{10, 20}},
		{Path: "b", Type: "file", Size: 7, Sums: sum(3), Sizes: []uint32{7}},
	}
	var tally chunkTally
	tally.add(entries, func(s []byte) bool { return s[0] != 3 }) // the store lacks 3 only
	if len(tally.lack) != 1 || tally.newBytes != 7 || len(tally.sizes) != 1 {
		t.Fatalf("tally: lack %d, newBytes %d, sizes %d; want 1, 7, 1", len(tally.lack), tally.newBytes, len(tally.sizes))
	}
	refs, err := sizedRefs(tally.sizes, append(append(sum(3), sum(2)...), sum(1)...), entries)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(refs[0].size, refs[1].size, refs[2].size); got != "7 20 10" {
		t.Fatalf("sizes %s, want 7 20 10", got)
	}
	if _, err := sizedRefs(tally.sizes, sum(9), entries); err == nil {
		t.Fatal("a name the manifest does not hold was given a size")
	}
	if refs, err := sizedRefs(nil, sum(2), entries); err != nil || refs[0].size != 20 {
		t.Fatalf("without sizes: %v %v", refs, err)
	}
}
