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
