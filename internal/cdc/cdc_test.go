package cdc

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"testing"
)

func random(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func chunks(t testing.TB, c Config, data []byte) [][32]byte {
	t.Helper()
	var out [][32]byte
	total := 0
	err := c.Split(bytes.NewReader(data), func(ch []byte) error {
		total += len(ch)
		out = append(out, sha256.Sum256(ch))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total != len(data) {
		t.Fatalf("chunks cover %d bytes, want %d", total, len(data))
	}
	return out
}

func TestSizesWithinBounds(t *testing.T) {
	data := random(8<<20, 1)
	var sizes []int
	Default.Split(bytes.NewReader(data), func(ch []byte) error { sizes = append(sizes, len(ch)); return nil })
	for i, n := range sizes {
		if n > DefaultMax || (n < DefaultMin && i != len(sizes)-1) {
			t.Fatalf("chunk %d has %d bytes, outside [%d, %d]", i, n, DefaultMin, DefaultMax)
		}
	}
	avg := len(data) / len(sizes)
	if avg < DefaultAvg/2 || avg > DefaultAvg*2 {
		t.Fatalf("average chunk %d bytes, want near %d", avg, DefaultAvg)
	}
}

func TestInsertMovesFewChunks(t *testing.T) {
	tests := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"insert at start", func(b []byte) []byte { return append([]byte("hello"), b...) }},
		{"delete in middle", func(b []byte) []byte { return append(append([]byte{}, b[:3<<20]...), b[3<<20+100:]...) }},
		{"overwrite in middle", func(b []byte) []byte {
			c := bytes.Clone(b)
			copy(c[5<<20:], "changed")
			return c
		}},
	}
	data := random(8<<20, 2)
	before := chunks(t, Config{}, data)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			after := chunks(t, Config{}, tc.edit(data))
			old := map[[32]byte]bool{}
			for _, h := range before {
				old[h] = true
			}
			fresh := 0
			for _, h := range after {
				if !old[h] {
					fresh++
				}
			}
			if fresh > 3 {
				t.Fatalf("%d of %d chunks changed after a small edit, want at most 3", fresh, len(after))
			}
		})
	}
}

func TestDeterministicAndShort(t *testing.T) {
	for _, n := range []int{0, 1, DefaultMin, DefaultMin + 1, DefaultMax, DefaultMax + 1} {
		data := random(n, 3)
		a, b := chunks(t, Config{}, data), chunks(t, Config{}, data)
		if len(a) != len(b) {
			t.Fatalf("%d bytes: %d chunks then %d", n, len(a), len(b))
		}
	}
	if err := (Config{Min: 100, Avg: 1000, Max: 5000}).Split(bytes.NewReader(nil), nil); err == nil {
		t.Fatal("an average that is not a power of two was accepted")
	}
}

func BenchmarkSplit(b *testing.B) {
	data := random(64<<20, 4)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		Default.Split(bytes.NewReader(data), func([]byte) error { return nil })
	}
}

// BenchmarkSplitSmall splits many small inputs, as a scan of a source
// tree does: the allocations per op show whether each call makes a
// buffer of its own.
func BenchmarkSplitSmall(b *testing.B) {
	data := random(8<<10, 5)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		Default.Split(bytes.NewReader(data), func([]byte) error { return nil })
	}
}

// TestCutPointsFixed pins the cut points of a known input: they are part
// of the snapshot format (a chunk named in a stored snapshot must be cut
// the same way by every later version), so any change to the gear
// table, the masks or the loops that moves one fails here.
func TestCutPointsFixed(t *testing.T) {
	data := random(4<<20, 7)
	var sizes []int
	if err := Default.Split(bytes.NewReader(data), func(ch []byte) error { sizes = append(sizes, len(ch)); return nil }); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, n := range sizes {
		fmt.Fprintf(h, "%d,", n)
	}
	const want = "8c96d7fb85ddd50535a6676b6b7378d26b11cd2c20bdade6c8c25986925f02e4"
	if got := fmt.Sprintf("%x", h.Sum(nil)); got != want {
		t.Fatalf("cut points of the pinned input changed: %d chunks, sizes %v, digest %s", len(sizes), sizes, got)
	}
}

// BenchmarkCut is the rolling hash alone, over random data cut after cut
// (Split adds the reads and the copies).
func BenchmarkCut(b *testing.B) {
	data := random(64<<20, 4)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		for d := data; len(d) > 0; {
			d = d[Default.Cut(d):]
		}
	}
}
