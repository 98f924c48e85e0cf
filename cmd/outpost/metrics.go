//go:build !agent

package main

import (
	"encoding/json"
	"net/http"
	"runtime/metrics"
)

// runtimeSamples are the runtime/metrics an operator (or the load tool)
// reads to tell a control plane's own cost apart from the latency its
// callers see: garbage collection, scheduling delay, goroutines, heap.
var runtimeSamples = []string{
	"/gc/cycles/total:gc-cycles",
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/gc/mark/assist:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/gc/heap/live:bytes",
	"/gc/heap/allocs:bytes",
	"/gc/heap/allocs:objects",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/gc/scan/stack:bytes",
	"/gc/stack/starting-size:bytes",
	"/gc/heap/goal:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/gc/gogc:percent",
	"/gc/gomemlimit:bytes",
	"/sched/goroutines:goroutines",
	"/sched/pauses/total/gc:seconds",
	"/sched/latencies:seconds",
	"/sync/mutex/wait/total:seconds",
}

// metricsSnapshot is what /debug/metrics answers: the runtime's figures
// (counters are totals since the start; histograms are cumulative, so a
// reader diffs two snapshots) and the control plane's own counters.
type metricsSnapshot struct {
	Runtime    map[string]float64   `json:"runtime"`
	Histograms map[string]histogram `json:"histograms"`
	Outpost    any                  `json:"outpost,omitempty"`
}

// histogram is a runtime/metrics Float64Histogram: Counts[i] samples fell
// in [Buckets[i], Buckets[i+1]).
type histogram struct {
	Counts  []uint64  `json:"counts"`
	Buckets []float64 `json:"buckets"`
}

// metricsHandler serves a metricsSnapshot as JSON; stats, when set, adds
// the control plane's counters.
func metricsHandler(stats func() any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		samples := make([]metrics.Sample, len(runtimeSamples))
		for i, name := range runtimeSamples {
			samples[i].Name = name
		}
		metrics.Read(samples)
		snap := metricsSnapshot{Runtime: map[string]float64{}, Histograms: map[string]histogram{}}
		for _, s := range samples {
			switch s.Value.Kind() {
			case metrics.KindUint64:
				snap.Runtime[s.Name] = float64(s.Value.Uint64())
			case metrics.KindFloat64:
				snap.Runtime[s.Name] = s.Value.Float64()
			case metrics.KindFloat64Histogram:
				h := s.Value.Float64Histogram()
				snap.Histograms[s.Name] = histogram{Counts: h.Counts, Buckets: finite(h.Buckets)}
			}
		}
		if stats != nil {
			snap.Outpost = stats()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(snap)
	}
}

// finite replaces ±Inf bucket bounds (JSON has no infinities) with the
// nearest finite bound.
func finite(b []float64) []float64 {
	out := append([]float64(nil), b...)
	for i, v := range out {
		if v > 1e300 && i > 0 {
			out[i] = out[i-1]
		}
		if v < -1e300 && i+1 < len(out) {
			out[i] = 0
		}
	}
	return out
}
