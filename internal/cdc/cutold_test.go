package cdc

import (
	"bytes"
	"testing"
)

// cutOld is Cut as it was before its loops ranged over subslices (main
// at 71841b0), kept to check the rewrite cuts at the same points: cut
// points are part of the snapshot format.
func cutOld(c Config, data []byte) int {
	c = c.withDefaults()
	n := len(data)
	if n <= c.Min {
		return n
	}
	n = min(n, c.Max)
	normal := min(c.Avg, n)
	maskS, maskL := masks(c.Avg)
	var h uint64
	i := c.Min
	for ; i < normal; i++ {
		h = (h << 1) + gear[data[i]]
		if h&maskS == 0 {
			return i + 1
		}
	}
	for ; i < n; i++ {
		h = (h << 1) + gear[data[i]]
		if h&maskL == 0 {
			return i + 1
		}
	}
	return n
}

// cutBoth is Cut and cutOld on the same input, or the panic of either.
func cutBoth(t *testing.T, c Config, data []byte) {
	t.Helper()
	want := cutOld(c, data)
	var got int
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("Cut(%+v, %d bytes) panicked: %v; the old Cut returned %d", c, len(data), p, want)
			}
		}()
		got = c.Cut(data)
	}()
	if got != want {
		t.Fatalf("Cut(%+v, %d bytes) = %d, the old Cut %d", c, len(data), got, want)
	}
}

// TestCutMatchesOld compares Cut with the old loops over varied lengths
// and configurations, including data that cuts nowhere (all zeros hash
// to zero at once; constant non-zero bytes never do), short inputs, and
// configurations Cut accepts without validating (it is exported and
// does not validate: partial ones get defaults for their zero fields).
func TestCutMatchesOld(t *testing.T) {
	configs := []Config{
		{}, Default,
		{Min: 64, Avg: 256, Max: 1024},
		{Min: 2048, Avg: 4096, Max: 8192},
		{Min: 100, Avg: 128, Max: 129},
		{Min: 65, Avg: 128, Max: 1024},   // an odd first range: roll ends on a byte alone
		{Min: 100 << 10},                 // Min above the default Avg
		{Min: 300 << 10},                 // Min above the default Max
		{Min: 1000, Avg: 512, Max: 4096}, // Avg below Min
	}
	inputs := [][]byte{nil, {1}, bytes.Repeat([]byte{0}, 300<<10), bytes.Repeat([]byte{0xa5}, 300<<10)}
	for i, n := range []int{63, 64, 65, 1000, 5000, 70 << 10, 256 << 10, 600 << 10} {
		inputs = append(inputs, random(n, uint64(i+11)))
	}
	for _, c := range configs {
		for _, data := range inputs {
			for _, off := range []int{0, 1, 17} {
				if off <= len(data) {
					cutBoth(t, c, data[off:])
				}
			}
		}
	}
}

// FuzzCutMatchesOld: Cut and the old loops agree on any input and any
// configuration the fuzzer makes up (sizes kept small so that cuts are
// reached).
func FuzzCutMatchesOld(f *testing.F) {
	f.Add(random(5000, 3), uint16(64), uint8(8), uint16(1024))
	f.Add(random(5000, 4), uint16(1000), uint8(9), uint16(4096))
	f.Add(bytes.Repeat([]byte{7}, 3000), uint16(100), uint8(7), uint16(200))
	f.Fuzz(func(t *testing.T, data []byte, min uint16, avgLog uint8, max uint16) {
		c := Config{Min: int(min), Avg: 1 << (avgLog % 20), Max: int(max)}
		cutBoth(t, c, data)
	})
}
