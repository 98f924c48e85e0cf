package controlplane

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// liar is an agent that answers every call with reply (it fills out),
// whatever it is asked: the control plane must not trust it.
type liar struct {
	mu    sync.Mutex
	calls int
	reply func(n int, op string, out any) error
}

func (l *liar) Name() string       { return "liar" }
func (l *liar) Epoch() uint64      { return 0 }
func (l *liar) LastAgent() string  { return "liar" }
func (l *liar) Concurrent() target { return l }
func (l *liar) Call(_ context.Context, op string, _, out any, _ rpc.CallOptions) error {
	l.mu.Lock()
	l.calls++
	n := l.calls
	l.mu.Unlock()
	return l.reply(n, op, out)
}

var errLiar = errors.New("liar: no more")

// A scan that claims an absurd number of entries (negative, or more than
// memory holds) is a bad reply or is paged as far as its real pages go:
// the control plane never sizes anything by the claim.
func TestReadManifestHostileCount(t *testing.T) {
	for _, c := range []struct {
		name string
		scan wire.SnapScanResult
	}{
		{"negative", wire.SnapScanResult{Handle: "h", Entries: -1}},
		{"huge", wire.SnapScanResult{Handle: "h", Entries: 1 << 50}},
		{"huge with pages", wire.SnapScanResult{Handle: "h", Entries: 1 << 50, Pages: []int{1 << 40}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := &liar{reply: func(int, string, any) error { return errLiar }}
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("the control plane panicked: %v", p)
					}
				}()
				_, err = (&Server{}).readManifest(context.Background(), l, c.scan, nil)
			}()
			if err == nil {
				t.Fatal("a hostile scan's manifest was read")
			}
		})
	}
}

// The page starts a scan gives are bounded by its reply's size only: the
// control plane holds what a window of pages needs, not a slot per page.
func TestReadManifestPagesBoundedMemory(t *testing.T) {
	pages := make([]int, 200_000)
	for i := range pages {
		pages[i] = i + 1
	}
	scan := wire.SnapScanResult{Handle: "h", Entries: len(pages) + 1, Pages: pages}
	l := &liar{reply: func(int, string, any) error { return errLiar }}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := (&Server{}).readManifest(context.Background(), l, scan, nil); !errors.Is(err, errLiar) {
		t.Fatalf("err %v, want the agent's", err)
	}
	runtime.ReadMemStats(&after)
	// The starts are 1.6 MB and the room made for a page's worth of
	// entries ~12 MB; a channel per page was ~45 MB more.
	room := uint64(manifestCap(scan)) * uint64(unsafe.Sizeof(wire.SnapEntry{}))
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20+room {
		t.Fatalf("reading a manifest of %d claimed pages allocated %d bytes before its first page failed", len(pages), n)
	}
}

// A plan that claims more lacking chunks than its manifest names is a
// bad reply: the control plane does not page names without end.
func TestRestorePlanHostileLack(t *testing.T) {
	sum := make([]byte, wire.SumSize)
	entries := []wire.SnapEntry{{Path: "a", Type: "file", Size: 1, Sums: sum, Sizes: []uint32{1}}}
	for _, lack := range []int{2, 1 << 40, 1<<59 + 1} {
		l := &liar{reply: func(n int, op string, out any) error {
			if n > 1000 {
				return errLiar
			}
			switch op {
			case wire.OpSnapRestoreManifest:
				*out.(*wire.SnapRestorePlan) = wire.SnapRestorePlan{Lack: lack, Sums: sum}
			case wire.OpSnapRestoreLack:
				*out.(*wire.SnapLackPage) = wire.SnapLackPage{Sums: make([]byte, 1000*wire.SumSize)}
			}
			return nil
		}}
		_, err := (&Server{}).sendManifestFrom(context.Background(), l, "h", entries, 0, nil)
		var we *wire.Error
		if !errors.As(err, &we) || we.Reason != wire.ReasonBadReply {
			t.Fatalf("plan lacking %d of 1 chunk: err %v after %d calls; want a bad reply", lack, err, l.calls)
		}
		if l.calls > 1 {
			t.Fatalf("plan lacking %d of 1 chunk: %d calls; want the plan's only", lack, l.calls)
		}
	}
}

// Whatever page starts an agent gives, those used begin at 0, increase,
// and lie inside the manifest.
func FuzzPageStarts(f *testing.F) {
	f.Add(10, []byte{4, 8})
	f.Add(10, []byte{0, 4})
	f.Add(10, []byte{6, 4})
	f.Add(-1, []byte{})
	f.Add(1<<40, []byte{255, 255})
	f.Fuzz(func(t *testing.T, n int, raw []byte) {
		var pages []int
		for i := 0; i+1 < len(raw); i += 2 {
			pages = append(pages, int(int8(raw[i]))<<8|int(raw[i+1]))
		}
		starts := pageStarts(wire.SnapScanResult{Entries: n, Pages: pages})
		if starts == nil {
			return
		}
		if starts[0] != 0 || len(starts) != len(pages)+1 {
			t.Fatalf("starts %v of pages %v", starts, pages)
		}
		for i := 1; i < len(starts); i++ {
			if starts[i] <= starts[i-1] || starts[i] >= n {
				t.Fatalf("starts %v of %d entries", starts, n)
			}
		}
	})
}

// pager answers snap.manifest from entries, pages of per entries, the
// later pages sooner (so they arrive out of order), and fails the page at
// failAt (when not negative).
type pager struct {
	liar
	entries []wire.SnapEntry
	failAt  int
	running int // under liar.mu
}

func (p *pager) Concurrent() target { return p }

func (p *pager) Call(ctx context.Context, op string, body, out any, _ rpc.CallOptions) error {
	p.mu.Lock()
	p.running++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.running--
		p.mu.Unlock()
	}()
	off := body.(*wire.SnapPageRequest).Offset
	select {
	case <-time.After(time.Duration(len(p.entries)-off) * 100 * time.Microsecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	if off == p.failAt {
		return errLiar
	}
	end := min(off+7, len(p.entries))
	*out.(*wire.SnapManifestPage) = wire.SnapManifestPage{Entries: p.entries[off:end], Next: end}
	return nil
}

// Pages asked for at once arrive out of order and are taken in order; a
// page that fails ends the read, with no call left under way.
func TestReadManifestPagesOrder(t *testing.T) {
	var entries []wire.SnapEntry
	var starts []int
	for i := range 100 {
		entries = append(entries, wire.SnapEntry{Path: fmt.Sprintf("f%03d", i), Type: "file"})
		if i > 0 && i%7 == 0 {
			starts = append(starts, i)
		}
	}
	// With the starts, pages are asked for at once; without them (an
	// older agent) or with starts that make no sense, one after the other.
	for _, pg := range [][]int{starts, nil, {0, 7}, {7, 300}} {
		scan := wire.SnapScanResult{Handle: "h", Entries: len(entries), Pages: pg}
		testReadManifestOrder(t, scan, entries)
	}
}

func testReadManifestOrder(t *testing.T, scan wire.SnapScanResult, entries []wire.SnapEntry) {
	t.Helper()
	for _, failAt := range []int{-1, 0, 49, 98} {
		p := &pager{entries: entries, failAt: failAt}
		var seen []string
		got, err := (&Server{}).readManifest(context.Background(), p, scan, func(page []wire.SnapEntry) {
			for _, e := range page {
				seen = append(seen, e.Path)
			}
		})
		p.mu.Lock()
		running := p.running
		p.mu.Unlock()
		if running != 0 {
			t.Fatalf("fail at %d: %d page calls still under way after the read", failAt, running)
		}
		if failAt >= 0 {
			if !errors.Is(err, errLiar) {
				t.Fatalf("fail at %d: err %v", failAt, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range entries {
			if got[i].Path != entries[i].Path || seen[i] != entries[i].Path {
				t.Fatalf("entry %d: %s (page %s), want %s", i, got[i].Path, seen[i], entries[i].Path)
			}
		}
		if len(got) != len(entries) || len(seen) != len(entries) {
			t.Fatalf("%d entries (%d in pages), want %d", len(got), len(seen), len(entries))
		}
	}
}

// Page starts that do not match the pages the agent answers (a page that
// ends short of, or past, the next start) are a bad reply, never a gap or
// an overlap in the manifest.
func TestReadManifestPagesMismatch(t *testing.T) {
	var entries []wire.SnapEntry
	for i := range 30 {
		entries = append(entries, wire.SnapEntry{Path: fmt.Sprintf("f%03d", i), Type: "file"})
	}
	for _, pg := range [][]int{{10, 20}, {5, 20}, {7, 14, 21, 29}} {
		p := &pager{entries: entries, failAt: -1}
		_, err := (&Server{}).readManifest(context.Background(), p, wire.SnapScanResult{Handle: "h", Entries: len(entries), Pages: pg}, nil)
		var we *wire.Error
		if !errors.As(err, &we) || we.Reason != wire.ReasonBadReply {
			t.Fatalf("starts %v over pages of 7: err %v, want a bad reply", pg, err)
		}
	}
}

// Whatever plan (lack, c) and lack pages an agent answers, the control
// plane ends, with a bad reply or with at most as many chunks as the
// manifest names, each of them the manifest's, with the manifest's size.
func FuzzRestorePlan(f *testing.F) {
	f.Add(2, []byte{1, 2}, []byte{1})
	f.Add(1, []byte{1}, []byte{})
	f.Add(0, []byte{}, []byte{9})
	f.Add(-3, []byte{1, 1, 1}, []byte{1, 2})
	f.Add(1<<59+1, []byte{1}, []byte{2})
	f.Fuzz(func(t *testing.T, lack int, c, page []byte) {
		sum := func(b byte) []byte { s := make([]byte, wire.SumSize); s[0] = b; return s }
		entries := []wire.SnapEntry{
			{Path: "a", Type: "file", Size: 30, Sums: append(sum(1), sum(2)...), Sizes: []uint32{10, 20}},
			{Path: "b", Type: "file", Size: 7, Sums: sum(3), Sizes: []uint32{7}},
		}
		sizes := map[byte]uint32{1: 10, 2: 20, 3: 7}
		names := func(bs []byte) []byte {
			var out []byte
			for _, b := range bs {
				out = append(out, sum(b)...)
			}
			return out
		}
		l := &liar{reply: func(n int, op string, out any) error {
			if n > 100 {
				t.Fatalf("%d calls for a manifest of 3 chunks", n)
			}
			switch op {
			case wire.OpSnapRestoreManifest:
				*out.(*wire.SnapRestorePlan) = wire.SnapRestorePlan{Lack: lack, Sums: names(c)}
			case wire.OpSnapRestoreLack:
				*out.(*wire.SnapLackPage) = wire.SnapLackPage{Sums: names(page)}
			}
			return nil
		}}
		refs, err := (&Server{}).sendManifestFrom(context.Background(), l, "h", entries, 0, nil)
		if err != nil {
			return
		}
		if len(refs) > 3 || len(refs) != lack {
			t.Fatalf("%d chunks sent for a plan lacking %d of a manifest of 3", len(refs), lack)
		}
		for _, r := range refs {
			if want, ok := sizes[r.sum[0]]; !ok || r.size != want || string(r.sum[1:]) != string(make([]byte, wire.SumSize-1)) {
				t.Fatalf("chunk %x of size %d is not the manifest's", r.sum, r.size)
			}
		}
	})
}
