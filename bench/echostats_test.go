package main

import (
	"math"
	"testing"
	"time"
)

func TestRatioSpread(t *testing.T) {
	base := make(latencies, 500)
	for i := range base {
		base[i] = time.Duration(50+i%97) * time.Microsecond
	}
	double := make(latencies, len(base))
	for i, d := range base {
		double[i] = 2 * d
	}
	// One client twice as slow in every round: every resample says 2×.
	if lo, hi := ratioSpread(double, base, 99, 200); lo != 2 || hi != 2 {
		t.Errorf("twice as slow: spread %v–%v, want 2–2", lo, hi)
	}
	// A tail of five slow keystrokes in 500 (fewer than 1%) for one
	// client: its p99 is the slow tail in some resamples and not in
	// others, so the spread straddles the run's own ratio.
	tail := append(latencies(nil), base...)
	for i := range 5 {
		tail[i*100] = 2 * time.Millisecond
	}
	point := float64(tail.pct(99)) / float64(base.pct(99))
	lo, hi := ratioSpread(tail, base, 99, 500)
	if !(lo < point || hi > point) || lo > point || hi < point || lo >= hi {
		t.Errorf("a tail at p99: spread %v–%v around the run's %v, want it wide and around it", lo, hi, point)
	}
	if hi < 10 {
		t.Errorf("a tail at p99: spread's top %v, want the tail's ratio (>10×) among the resamples", hi)
	}
	// Seeded: the same run gives the same interval.
	if lo2, hi2 := ratioSpread(tail, base, 99, 500); lo2 != lo || hi2 != hi {
		t.Errorf("not repeatable: %v–%v then %v–%v", lo, hi, lo2, hi2)
	}
	if lo, hi := ratioSpread(nil, base, 50, 10); lo != 0 || hi != 0 || math.IsNaN(lo) {
		t.Errorf("no keystrokes: %v–%v, want 0–0", lo, hi)
	}
}

// TestByTurn holds byTurn to echoLatenciesRun's order: in round r the
// client r%2 goes first, right after its own keystroke that ended round
// r-1; the other goes second, after it.
func TestByTurn(t *testing.T) {
	var order []int // the client of each keystroke, in the order typed
	for r := range 6 {
		for j := range 2 {
			order = append(order, (r+j)%2)
		}
	}
	var lat [2]latencies
	prevSame := map[[2]int]bool{} // (client, round) → the keystroke before was the same client's
	for k, c := range order {
		r := len(lat[c])
		lat[c] = append(lat[c], time.Duration(1000*c+r))
		if k > 0 {
			prevSame[[2]int{c, r}] = order[k-1] == c
		}
	}
	own, other := byTurn(lat[:])
	for c := range 2 {
		for _, d := range own[c] {
			if r := int(d) - 1000*c; !prevSame[[2]int{c, r}] {
				t.Errorf("client %d round %d in own, but the keystroke before was the other's", c, r)
			}
		}
		for _, d := range other[c] {
			if r := int(d) - 1000*c; prevSame[[2]int{c, r}] {
				t.Errorf("client %d round %d in other, but the keystroke before was its own", c, r)
			}
		}
		if len(own[c])+len(other[c]) != 5 || len(own[c]) == 0 || len(other[c]) == 0 {
			t.Errorf("client %d: %d own, %d other; want rounds 1–5 split between them", c, len(own[c]), len(other[c]))
		}
	}
}
