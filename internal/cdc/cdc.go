// Package cdc splits byte streams into content-defined chunks with FastCDC
// (Xia et al., USENIX ATC 2016): a gear rolling hash, cut points where its
// top bits are zero, and normalized chunking (a stricter mask before the
// average size, a looser one after), so chunk sizes cluster around the
// average. An insertion or deletion moves only the cut points near it: the
// chunks of the rest of a file stay the same, which is what lets a snapshot
// send only what changed.
//
// It is written here rather than taken from github.com/restic/chunker
// (Rabin fingerprints): the gear hash is one shift, one add and one table
// look-up per byte, several times faster than a Rabin window, and the
// package is a hundred lines with no dependency. Cut points are part of
// the snapshot format: the gear table and masks must never change.
package cdc

import (
	"errors"
	"io"
	"math/bits"
	"sync"
)

// Default chunk sizes: a 64 KiB average keeps a GiB at about 16,000
// chunks while a small edit re-sends a few tens of KiB.
const (
	DefaultMin = 16 << 10
	DefaultAvg = 64 << 10
	DefaultMax = 256 << 10
)

// Config sizes chunks. The zero value means the defaults.
type Config struct {
	// Min is the smallest chunk, except a stream's last; Avg the average
	// (a power of two); Max the largest.
	Min, Avg, Max int
}

// Default is Config{} with the defaults applied.
var Default = Config{Min: DefaultMin, Avg: DefaultAvg, Max: DefaultMax}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.Min == 0 {
		c.Min = DefaultMin
	}
	if c.Avg == 0 {
		c.Avg = DefaultAvg
	}
	if c.Max == 0 {
		c.Max = DefaultMax
	}
	return c
}

// validate checks 64 <= Min < Avg < Max and that Avg is a power of two.
func (c Config) validate() error {
	if c.Min < 64 || c.Min >= c.Avg || c.Avg >= c.Max || bits.OnesCount(uint(c.Avg)) != 1 {
		return errors.New("cdc: need 64 <= Min < Avg < Max with Avg a power of two")
	}
	return nil
}

// masks returns the strict (small) and loose (large) masks for avg: the
// normalization level 2 of the paper, two bits either side.
func masks(avg int) (uint64, uint64) {
	b := bits.Len(uint(avg)) - 1
	return spread(b + 2), spread(b - 2)
}

// spread makes a mask of n one-bits spread over the hash's top 48 bits, as
// FastCDC's masks are (the gear hash's low bits see few bytes).
func spread(n int) uint64 {
	var m uint64
	for i := 0; i < n; i++ {
		m |= 1 << (63 - (i*48)/n)
	}
	return m
}

// gear is the table of the rolling hash: 256 fixed pseudo-random words
// (splitmix64 from a fixed seed). Changing it changes every cut point.
var gear = func() (g [256]uint64) {
	x := uint64(0x6f7574706f737421) // "outpost!"
	for i := range g {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		g[i] = z ^ (z >> 31)
	}
	return g
}()

// Cut returns the length of the first chunk of data. data must hold at
// least Max bytes unless it is the end of the stream; then the whole of a
// short data is one chunk.
func (c Config) Cut(data []byte) int {
	c = c.withDefaults()
	n := len(data)
	if n <= c.Min {
		return n
	}
	n = min(n, c.Max)
	normal := min(c.Avg, n)
	maskS, maskL := masks(c.Avg)
	// The bounds are those of one index i running from Min, through
	// normal, to n: with a configuration Cut does not validate (Avg or
	// Max below Min), a range whose end is behind i is empty.
	mid := max(normal, c.Min)
	end := max(n, mid)
	i, h := roll(data[c.Min:mid], 0, maskS)
	if i >= 0 {
		return c.Min + i + 1
	}
	if i, _ = roll(data[mid:end], h, maskL); i >= 0 {
		return mid + i + 1
	}
	return n
}

// roll runs the gear hash h over d: it returns the index of the first
// byte after which h&mask is zero (-1 when none is), and h after all of
// d. This loop is a third of a scan's CPU. It takes two bytes a step:
// the hash after the second, (h<<1+g0)<<1+g1, is h<<2+(g0<<1+g1), one
// operation on the chain from h instead of two (a shift and an add per
// byte), the other half computed beside it; the hash after the first is
// needed for its test only.
func roll(d []byte, h, mask uint64) (int, uint64) {
	i := 0
	for ; i+1 < len(d); i += 2 {
		g0 := gear[d[i]]
		h1 := h<<1 + g0
		h = h<<2 + (g0<<1 + gear[d[i+1]])
		if h1&mask == 0 {
			return i, h1
		}
		if h&mask == 0 {
			return i + 1, h
		}
	}
	if i < len(d) {
		h = h<<1 + gear[d[i]]
		if h&mask == 0 {
			return i, h
		}
	}
	return -1, h
}

// bufs holds Split's buffers (*[]byte) between calls: a snapshot splits
// every file of a tree, and a buffer of 2*Max made for each (512 KiB for
// a file of 2 KB) was most of a scan's allocation and its GC.
var bufs sync.Pool

// Split reads r to its end and calls emit with each chunk in order. The
// chunk aliases an internal buffer valid only during the call.
func (c Config) Split(r io.Reader, emit func(chunk []byte) error) error {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return err
	}
	bp, _ := bufs.Get().(*[]byte)
	if bp == nil || len(*bp) < 2*c.Max {
		b := make([]byte, 2*c.Max)
		bp = &b
	}
	defer bufs.Put(bp)
	buf := (*bp)[:2*c.Max]
	start, end := 0, 0
	eof := false
	for {
		if !eof && end-start < c.Max {
			copy(buf, buf[start:end])
			end -= start
			start = 0
			m, err := io.ReadFull(r, buf[end:])
			end += m
			switch {
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				eof = true
			case err != nil:
				return err
			}
		}
		if start == end {
			return nil
		}
		n := c.Cut(buf[start:end])
		if err := emit(buf[start : start+n]); err != nil {
			return err
		}
		start += n
	}
}
