package proc

import (
	"strings"
	"testing"
	"time"
)

func TestOutbufRetentionCountsBytesAndChunks(t *testing.T) {
	tests := []struct {
		name        string
		lim         limits
		writes      []string
		wantKept    string
		wantDropped int64
		wantFirst   uint64
	}{
		{"chunk limit", limits{bytes: 1 << 20, chunks: 3, window: 1 << 20, windowChunks: 3}, []string{"a", "b", "c", "d", "e"}, "cde", 2, 3},
		{"byte limit", limits{bytes: 4, chunks: 100, window: 4, windowChunks: 100}, []string{"aa", "bb", "cc", "dd"}, "ccdd", 4, 3},
		{"within limits", limits{bytes: 100, chunks: 100, window: 100, windowChunks: 100}, []string{"x", "y"}, "xy", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newOutbuf(tt.lim, true, time.Now())
			for _, w := range tt.writes {
				b.append(streamStdout, []byte(w))
			}
			b.exit(0, false)
			b.close()
			res, ok := b.read(0, 1<<20)
			if !ok {
				t.Fatal("read failed")
			}
			var kept strings.Builder
			for _, c := range res.chunks {
				kept.Write(c.data)
			}
			if kept.String() != tt.wantKept || res.dropped != tt.wantDropped || res.chunks[0].seq != tt.wantFirst {
				t.Fatalf("kept %q dropped %d first seq %d; want %q %d %d", kept.String(), res.dropped, res.chunks[0].seq, tt.wantKept, tt.wantDropped, tt.wantFirst)
			}
			n := uint64(len(tt.writes))
			if res.exitSeq != n+1 || res.closedSeq != n+2 || res.next != n+2 {
				t.Fatalf("exit %d closed %d next %d; want %d %d %d", res.exitSeq, res.closedSeq, res.next, n+1, n+2, n+2)
			}
			// A reader past the gap sees no drop.
			if res, _ := b.read(res.chunks[0].seq, 1<<20); res.dropped != 0 {
				t.Fatalf("dropped %d after the gap", res.dropped)
			}
		})
	}
}

func TestOutbufAttachedReaderKeepsUnacknowledged(t *testing.T) {
	lim := limits{bytes: 4, chunks: 100, window: 2, windowChunks: 100, grace: time.Hour}
	b := newOutbuf(lim, false, time.Now())
	stop := make(chan struct{})
	close(stop) // never block in this test; check what is kept
	for _, w := range []string{"aa", "bb", "cc"} {
		b.admit(stop)
		b.append(streamStdout, []byte(w))
	}
	res, _ := b.read(0, 1<<20)
	if len(res.chunks) != 3 || res.dropped != 0 {
		t.Fatalf("attached reader lost output: %d chunks, dropped %d", len(res.chunks), res.dropped)
	}
	if wait, _ := b.admitWaitLocked(time.Now()); !wait {
		t.Fatal("a pump past the window does not wait for the reader")
	}
	b.read(res.next, 1<<20) // acknowledges everything
	if wait, _ := b.admitWaitLocked(time.Now()); wait {
		t.Fatal("a pump waits although everything is acknowledged")
	}
}
