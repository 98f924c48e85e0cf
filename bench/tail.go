package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// slowCall is where tailReport draws the line: a call slower than this is
// in the tail it looks into.
const slowCall = 50 * time.Millisecond

// tailReport writes where a drive's slow calls were (issue 20: where the
// p99 comes from): by the time they were due, by the fleet process that
// served them, by kind; the slowest ones; and, for every half second the
// watch sampled, what the control plane, the driver and the fleet did
// meanwhile (the spans with slow calls or a GC of the control plane's,
// and the one before each), so a stall can be laid next to whose it was.
func tailReport(out io.Writer, label string, res loadResult, samples []cpSample) {
	var slow []callRecord
	byProc := map[int]int{}
	byOp := map[string]int{}
	for _, c := range res.each {
		if c.took > slowCall {
			slow = append(slow, c)
			byProc[c.agent/agentsPerProcess]++
			byOp[c.op]++
		}
	}
	fmt.Fprintf(out, "bench: tail of %s: %d of %d calls over %s; by fleet process %v; by kind %v\n",
		label, len(slow), len(res.each), slowCall, byProc, byOp)
	sort.Slice(slow, func(i, j int) bool { return slow[i].took > slow[j].took })
	var top []string
	for _, c := range slow[:min(len(slow), 5)] {
		top = append(top, fmt.Sprintf("a%d %s due %.3fs took %s (done %.3fs)", c.agent, c.op, c.due.Seconds(), ms(c.took), (c.due+c.took).Seconds()))
	}
	if len(top) > 0 {
		fmt.Fprintf(out, "  slowest: %s\n", strings.Join(top, "; "))
	}
	// The slow calls by when they returned, in 100 ms steps: a stall
	// that ends at one moment releases them together.
	done := map[int]int{}
	for _, c := range slow {
		done[int((c.due+c.took)/(100*time.Millisecond))]++
	}
	fmt.Fprintf(out, "  slow calls by when they returned (100 ms steps): %s\n", countsBy(done, 100*time.Millisecond))
	fmt.Fprintf(out, "  calls over %s by when they were due (500 ms steps): %s\n", goalCall, overByDue(res.each, goalCall))
	// The half seconds worth reading: those with slow calls or a GC of
	// the control plane's, and the one before each.
	type span struct {
		from, to    time.Duration
		due, nslow  int
		worst       time.Duration
		a, b        cpSample
		interesting bool
	}
	spans := make([]span, 0, len(samples))
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		sp := span{from: a.at.Sub(res.start), to: b.at.Sub(res.start), a: a, b: b}
		for _, c := range res.each {
			if c.due >= sp.from && c.due < sp.to {
				sp.due++
				if c.took > slowCall {
					sp.nslow++
				}
				sp.worst = max(sp.worst, c.took)
			}
		}
		sp.interesting = sp.nslow > 0 || b.m.Runtime["/gc/cycles/total:gc-cycles"] != a.m.Runtime["/gc/cycles/total:gc-cycles"]
		spans = append(spans, sp)
	}
	fmt.Fprintf(out, "  %-13s %6s %5s %9s | %-34s | %-22s | %s\n", "span", "due", "slow", "max", "serve: cores, sched p99, GC n/STW max/assist", "driver: sched p99, GC", "fleet: cores, worst sched p99 (process), GC n")
	for i, sp := range spans {
		if !sp.interesting && (i+1 >= len(spans) || !spans[i+1].interesting) {
			continue
		}
		a, b := sp.a, sp.b
		secs := b.at.Sub(a.at).Seconds()
		fmt.Fprintf(out, "  %5.1f-%5.1fs %6d %5d %9s | %4.2f, %9s, %d/%9s/%4.2fs | %9s, %d | %4.2f, %s\n",
			sp.from.Seconds(), sp.to.Seconds(), sp.due, sp.nslow, ms(sp.worst),
			(b.cpu-a.cpu).Seconds()/secs, ms(histDelta(a.m, b.m, "/sched/latencies:seconds", 99)),
			int(b.m.Runtime["/gc/cycles/total:gc-cycles"]-a.m.Runtime["/gc/cycles/total:gc-cycles"]),
			ms(histDelta(a.m, b.m, "/sched/pauses/total/gc:seconds", 100)),
			b.m.Runtime["/cpu/classes/gc/mark/assist:cpu-seconds"]-a.m.Runtime["/cpu/classes/gc/mark/assist:cpu-seconds"],
			ms(histDelta(a.self, b.self, "/sched/latencies:seconds", 99)),
			int(b.self.Runtime["/gc/cycles/total:gc-cycles"]-a.self.Runtime["/gc/cycles/total:gc-cycles"]),
			(b.fleetCPU-a.fleetCPU).Seconds()/secs, fleetSpan(a, b))
	}
}

// fleetSpan is the fleet processes' worst scheduling p99 between a and b
// (and whose) and their GC cycles together, over the processes that
// answered at both ends; "?" when none did.
func fleetSpan(a, b cpSample) string {
	if len(a.fleetM) != len(b.fleetM) {
		return "?"
	}
	var worst time.Duration
	who, gcs, seen := 0, 0, 0
	for i := range b.fleetM {
		if a.fleetM[i].Runtime == nil || b.fleetM[i].Runtime == nil {
			continue
		}
		seen++
		if d := histDelta(a.fleetM[i], b.fleetM[i], "/sched/latencies:seconds", 99); d > worst {
			worst, who = d, i
		}
		gcs += int(b.fleetM[i].Runtime["/gc/cycles/total:gc-cycles"] - a.fleetM[i].Runtime["/gc/cycles/total:gc-cycles"])
	}
	if seen == 0 {
		return "?"
	}
	return fmt.Sprintf("%s (p%d), %d", ms(worst), who, gcs)
}

// overByDue counts the calls that took over d by the half second they
// were due in ("2.5s:14" counts those due from 2.5 to 3.0 s).
func overByDue(each []callRecord, d time.Duration) string {
	n := map[int]int{}
	for _, c := range each {
		if c.took > d {
			n[int(c.due/(500*time.Millisecond))]++
		}
	}
	return countsBy(n, 500*time.Millisecond)
}

// countsBy renders counts of calls by step of a drive ("2.5s:14": 14 in
// the step that starts 2.5 s in), in the order of the steps.
func countsBy(counts map[int]int, step time.Duration) string {
	keys := make([]int, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%.1fs:%d", (time.Duration(k)*step).Seconds(), counts[k]))
	}
	return strings.Join(parts, " ")
}
