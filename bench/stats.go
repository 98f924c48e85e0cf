package main

import (
	"fmt"
	"sort"
	"time"
)

// latencies summarises a sample of durations.
type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := append(latencies(nil), l...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p / 100 * float64(len(s)-1))
	return s[i]
}

// ms is d in milliseconds to the microsecond, with its unit; msf the
// number alone.
func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", msf(d)) }

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// measure runs f n times (after a short warm-up) and returns the durations.
func measure(n int, f func() error) (latencies, error) {
	for i := 0; i < n/10+1; i++ {
		if err := f(); err != nil {
			return nil, err
		}
	}
	out := make(latencies, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// ratio is a/b as "1.23x", or "—" without a baseline.
func ratio(a, b time.Duration) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}
