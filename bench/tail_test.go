package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestTailReport: the report counts the slow calls by fleet process and
// kind, lays them in the half second they were due, next to the control
// plane's GC cycles counted there, and leaves out quiet spans.
func TestTailReport(t *testing.T) {
	start := time.Now()
	res := loadResult{start: start}
	for i := 0; i < 30; i++ {
		took := 2 * time.Millisecond
		if i >= 10 && i < 14 {
			took = 400 * time.Millisecond
		}
		op := "caps"
		if i%2 == 1 {
			op = "stat"
		}
		res.each = append(res.each, callRecord{due: time.Duration(i) * 100 * time.Millisecond, took: took, agent: 1000 + i, op: op})
	}
	sample := func(at time.Duration, gcs float64) cpSample {
		s := cpSample{at: start.Add(at)}
		s.m.Runtime = map[string]float64{"/gc/cycles/total:gc-cycles": gcs}
		return s
	}
	var samples []cpSample
	for i := 0; i <= 6; i++ {
		gcs := 0.0
		if i >= 3 {
			gcs = 1 // one GC of the control plane's between 1.0 s and 1.5 s
		}
		samples = append(samples, sample(time.Duration(i)*500*time.Millisecond, gcs))
	}
	var out bytes.Buffer
	tailReport(&out, "test", res, samples)
	got := out.String()
	for _, want := range []string{
		"4 of 30 calls over 50ms; by fleet process map[1:4]; by kind map[caps:2 stat:2]",
		"slowest: a1010 caps due 1.000s took 400.000 ms",
		"1.0-  1.5s      5     4",
		"slow calls by when they returned (100 ms steps): 1.4s:1 1.5s:1 1.6s:1 1.7s:1\n",
		"calls over 20ms by when they were due (500 ms steps): 1.0s:4\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	// Spans with nothing slow and no GC, not before such a span, are left out.
	if strings.Contains(got, "2.5-  3.0s") {
		t.Errorf("report shows a quiet span:\n%s", got)
	}
}

// TestOverByDue: the calls over the goal are counted in the half second
// they were due, whenever they returned; the calls at or under it are not.
func TestOverByDue(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		each []callRecord
		want string
	}{
		{"none over", []callRecord{{due: 0, took: 20 * ms}, {due: 700 * ms, took: ms}}, ""},
		{"by due, not done", []callRecord{{due: 400 * ms, took: 900 * ms}, {due: 499 * ms, took: 21 * ms}, {due: 500 * ms, took: 30 * ms}}, "0.0s:2 0.5s:1"},
		{"in order", []callRecord{{due: 2600 * ms, took: 25 * ms}, {due: 100 * ms, took: 25 * ms}, {due: 2900 * ms, took: 25 * ms}}, "0.0s:1 2.5s:2"},
	} {
		if got := overByDue(tc.each, 20*ms); got != tc.want {
			t.Errorf("%s: overByDue = %q, want %q", tc.name, got, tc.want)
		}
	}
}
