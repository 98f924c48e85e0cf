//go:build hoptrace

package hoptrace

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"
)

// Enabled reports whether this build records hops.
const Enabled = true

var (
	mu   sync.Mutex
	cur  [NumHops]int64
	done [][NumHops]int64
)

// Mark records that the current keystroke reached hop h. Typed starts a
// new keystroke; a hop marked twice keeps its first time.
func Mark(h int) {
	now := time.Now().UnixNano()
	mu.Lock()
	defer mu.Unlock()
	if h == Typed {
		if cur[Typed] != 0 {
			done = append(done, cur)
		}
		cur = [NumHops]int64{}
	}
	if cur[h] == 0 {
		cur[h] = now
	}
}

// Report writes each hop's delay from the one before (median, p99) over
// the keystrokes that reached every hop, and resets.
func Report(w io.Writer) {
	mu.Lock()
	keys := append(done, cur)
	done, cur = nil, [NumHops]int64{}
	mu.Unlock()
	if name := os.Getenv("HOPTRACE_FILE"); name != "" {
		dump(name, keys)
	}
	var d [NumHops][]float64
	for _, k := range keys {
		ok := true
		for _, t := range k {
			ok = ok && t != 0
		}
		if !ok {
			continue
		}
		for h := 1; h < NumHops; h++ {
			d[h] = append(d[h], float64(k[h]-k[h-1])/1e3)
		}
		d[0] = append(d[0], float64(k[CPSent]-k[CPStdin])/1e3)
	}
	// The whole echo and the client's part of it (both halves), before
	// the per-hop slices are sorted.
	var whole, cli []float64
	for i := range d[0] {
		cli = append(cli, d[CPStdin][i]+d[Echoed][i])
		whole = append(whole, cli[i]+d[0][i])
	}
	fmt.Fprintf(w, "hops (µs, p50 / p99) over %d keystrokes:\n", len(d[0]))
	line(w, "whole echo at the bench", whole)
	line(w, "client's part (both halves)", cli)
	for h := range NumHops {
		name := "total cp→cp"
		if h > 0 {
			name = Names[h-1] + " → " + Names[h]
		}
		line(w, name, d[h])
	}
}

// line writes one hop's median and p99.
func line(w io.Writer, name string, d []float64) {
	slices.Sort(d)
	if n := len(d); n > 0 {
		fmt.Fprintf(w, "  %-40s %8.1f %8.1f\n", name, d[n/2], d[n*99/100])
	}
}

// dump appends every keystroke's hops (ns since its Typed, tab-separated,
// in order) to file name (HOPTRACE_FILE), for a look at single ones.
func dump(name string, keys [][NumHops]int64) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	for _, k := range keys {
		for h := range NumHops {
			if h > 0 {
				w.WriteByte('\t')
			}
			if k[h] == 0 || k[0] == 0 {
				w.WriteString("-")
			} else {
				fmt.Fprint(w, k[h]-k[0])
			}
		}
		w.WriteByte('\n')
	}
}
