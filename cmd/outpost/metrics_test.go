//go:build !agent

package main

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// TestMetricsRuntimeFigures: /debug/metrics answers every runtime figure
// the load tool reads to tell the control plane's GC from other stalls,
// the CPU its goroutines spent in mark assists among them.
func TestMetricsRuntimeFigures(t *testing.T) {
	rec := httptest.NewRecorder()
	metricsHandler(nil)(rec, httptest.NewRequest("GET", "/debug/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var snap metricsSnapshot
	if err := json.Unmarshal(rec.Body.Bytes(), &snap); err != nil {
		t.Fatalf("decode: %v", err)
	}
	for _, name := range []string{"/cpu/classes/gc/mark/assist:cpu-seconds", "/cpu/classes/gc/total:cpu-seconds", "/gc/cycles/total:gc-cycles"} {
		if _, ok := snap.Runtime[name]; !ok {
			t.Errorf("no %s in %v", name, snap.Runtime)
		}
	}
	for _, name := range []string{"/sched/latencies:seconds", "/sched/pauses/total/gc:seconds"} {
		if h, ok := snap.Histograms[name]; !ok || len(h.Counts) == 0 {
			t.Errorf("no histogram %s", name)
		}
	}
}
