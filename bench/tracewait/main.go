// Command tracewait reads an execution trace of `outpost serve` (the load
// suite's -serve-trace, or /debug/pprof/trace) and says what its goroutines
// waited on, inside the GC's concurrent mark phase and outside it: how long
// runnable goroutines waited for a P (by the function the goroutine started
// in), which blocking waits (mutexes, channels, the network) ended in the
// mark phase and where, who woke the ones that waited on a lock, and a
// timeline in 100 ms steps (goroutines waiting to run, Ps in use by kind,
// cores really on the CPU when the trace has CPU samples, mark assists, new
// HTTP connections and TLS handshakes); and the mark assists: how many
// goroutines made them, by the function each started in and by the
// allocation that began each.
//
//	cd bench/tracewait && go run . [-timeline] TRACE
//
// It is a module of its own so that golang.org/x/exp/trace stays out of
// Outpost's dependencies.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

func main() {
	timeline := flag.Bool("timeline", false, "print the 100 ms timeline")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: tracewait [-timeline] TRACE")
		os.Exit(2)
	}
	b, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	a, err := analyze(b)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	a.report(os.Stdout, *timeline)
}

// analyze reads the trace in b in two passes: the mark windows first,
// then the waits and assists measured against them.
func analyze(b []byte) (*analysis, error) {
	a := newAnalysis()
	if err := each(b, a.windows); err != nil {
		return nil, err
	}
	if err := each(b, a.waits); err != nil {
		return nil, err
	}
	return a, nil
}

// each calls fn with every event of the trace in b, in order.
func each(b []byte, fn func(ev *trace.Event)) error {
	r, err := trace.NewReader(bytes.NewReader(b))
	if err != nil {
		return err
	}
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		fn(&ev)
	}
}

const (
	markPhase = "GC concurrent mark phase"
	assist    = "GC mark assist"
	step      = 100 * time.Millisecond
)

// openAssist is a mark assist under way: when it began, and the
// allocation that began it.
type openAssist struct {
	at   trace.Time
	site string
}

// window is a span of the trace, from a to b.
type window struct{ a, b trace.Time }

// waits is a set of durations of one kind.
type waits struct {
	n   int
	sum time.Duration
	all []time.Duration
}

func (w *waits) add(d time.Duration) {
	w.n++
	w.sum += d
	w.all = append(w.all, d)
}

func (w *waits) pct(p float64) time.Duration {
	if len(w.all) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), w.all...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

// byKey is waits by what they were (a stack, a function).
type byKey map[string]*waits

func (m byKey) add(k string, d time.Duration) {
	w := m[k]
	if w == nil {
		w = &waits{}
		m[k] = w
	}
	w.add(d)
}

// bucket is one step of the timeline.
type bucket struct {
	mark     bool
	runq     time.Duration // goroutine-time spent runnable
	maxSched time.Duration
	assist   time.Duration // goroutine-time inside mark assists
	running  map[string]time.Duration
	samples  int // CPU samples (about 10 ms of one core each)
	conns    int // HTTP connections accepted (conn.serve started)
	tls      int // CPU samples in a TLS server handshake
}

type analysis struct {
	t0      trace.Time
	marks   []window
	open    trace.Time
	root    map[trace.GoID]string // the function a goroutine started in
	steps   map[int]*bucket
	schedIn byKey
	schedOut,
	blockIn, blockOut, wakers byKey
	locksIn, locksOut byKey // waits on a sync.Mutex or RWMutex

	since         map[trace.GoID]trace.Time // of the goroutine's current state
	blockedOn     map[trace.GoID]string
	openAssist    map[trace.GoID]openAssist // the assist each goroutine is in
	assistsByRoot byKey                     // each mark assist's time, by the function its goroutine started in
	assisted      map[trace.GoID]bool       // goroutines that assisted at least once
	assistsBySite byKey                     // each mark assist's time, by where it began
}

func newAnalysis() *analysis {
	return &analysis{
		root: map[trace.GoID]string{}, steps: map[int]*bucket{},
		schedIn: byKey{}, schedOut: byKey{}, locksIn: byKey{}, locksOut: byKey{}, blockIn: byKey{}, blockOut: byKey{}, wakers: byKey{},
		since: map[trace.GoID]trace.Time{}, blockedOn: map[trace.GoID]string{}, openAssist: map[trace.GoID]openAssist{},
		assistsByRoot: byKey{}, assisted: map[trace.GoID]bool{}, assistsBySite: byKey{},
	}
}

// windows is the first pass: the mark phases and each goroutine's root.
func (a *analysis) windows(ev *trace.Event) {
	if a.t0 == 0 {
		a.t0 = ev.Time()
	}
	switch ev.Kind() {
	case trace.EventRangeBegin, trace.EventRangeActive:
		if ev.Range().Name == markPhase {
			a.open = ev.Time()
		}
	case trace.EventRangeEnd:
		if ev.Range().Name == markPhase && a.open != 0 {
			a.marks = append(a.marks, window{a.open, ev.Time()})
			a.open = 0
		}
	case trace.EventStateTransition:
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			return
		}
		g := st.Resource.Goroutine()
		from, _ := st.Goroutine()
		if _, ok := a.root[g]; ok && from != trace.GoNotExist {
			return
		}
		if r := last(st.Stack); r != "" {
			a.root[g] = r
		}
	}
}

func (a *analysis) inMark(t trace.Time) bool {
	for _, w := range a.marks {
		if t >= w.a && t <= w.b {
			return true
		}
	}
	return false
}

func (a *analysis) bucket(t trace.Time) *bucket {
	i := int(time.Duration(t-a.t0) / step)
	b := a.steps[i]
	if b == nil {
		b = &bucket{running: map[string]time.Duration{}}
		from := a.t0 + trace.Time(i)*trace.Time(step)
		for _, w := range a.marks {
			// A step counts as the mark phase's when they overlap.
			if w.a < from+trace.Time(step) && w.b > from {
				b.mark = true
			}
		}
		a.steps[i] = b
	}
	return b
}

// spread adds the span from..to into the timeline's steps through fn.
func (a *analysis) spread(from, to trace.Time, fn func(*bucket, time.Duration)) {
	for from < to {
		i := int(time.Duration(from-a.t0) / step)
		end := a.t0 + trace.Time(i+1)*trace.Time(step)
		if end > to {
			end = to
		}
		fn(a.bucket(from), time.Duration(end-from))
		from = end
	}
}

// kind groups goroutines by what they are, for the timeline.
func (a *analysis) kind(g trace.GoID) string {
	r := a.root[g]
	switch {
	case strings.Contains(r, "gcBgMarkWorker"):
		return "gc"
	case strings.HasPrefix(r, "nsrv."):
		return "nats-server"
	case strings.HasPrefix(r, "net/http."), strings.HasPrefix(r, "op/rpc."):
		return "http+rpc"
	case strings.HasPrefix(r, "runtime"):
		return "runtime"
	}
	return "other"
}

// waits is the second pass.
func (a *analysis) waits(ev *trace.Event) {
	t := ev.Time()
	switch ev.Kind() {
	case trace.EventStackSample:
		b := a.bucket(t)
		b.samples++
		for f := range ev.Stack().Frames() {
			if strings.Contains(f.Func, "serverHandshake") {
				b.tls++
				break
			}
		}
	case trace.EventRangeBegin, trace.EventRangeActive:
		if r := ev.Range(); r.Name == assist && r.Scope.Kind == trace.ResourceGoroutine {
			a.openAssist[r.Scope.Goroutine()] = openAssist{at: t, site: allocSite(ev.Stack(), 4)}
		}
	case trace.EventRangeEnd:
		if r := ev.Range(); r.Name == assist && r.Scope.Kind == trace.ResourceGoroutine {
			g := r.Scope.Goroutine()
			if open, ok := a.openAssist[g]; ok {
				d := t.Sub(open.at)
				a.spread(open.at, t, func(b *bucket, d time.Duration) { b.assist += d })
				a.assistsByRoot.add(a.root[g], d)
				a.assistsBySite.add(open.site, d)
				a.assisted[g] = true
				delete(a.openAssist, g)
			}
		}
	case trace.EventStateTransition:
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			return
		}
		g := st.Resource.Goroutine()
		from, to := st.Goroutine()
		at, known := a.since[g]
		a.since[g] = t
		if from == trace.GoNotExist && strings.HasPrefix(a.root[g], "net/http.(*conn).serve") {
			a.bucket(t).conns++
		}
		if !known {
			if to == trace.GoWaiting {
				a.blockedOn[g] = st.Reason + " | " + a.root[g] + " | " + frames(st.Stack, 7)
			}
			return
		}
		d := t.Sub(at)
		mark := a.inMark(t)
		switch from {
		case trace.GoRunning:
			k := a.kind(g)
			a.spread(at, t, func(b *bucket, d time.Duration) { b.running[k] += d })
		case trace.GoRunnable:
			a.spread(at, t, func(b *bucket, d time.Duration) { b.runq += d })
			if to == trace.GoRunning {
				if b := a.bucket(t); d > b.maxSched {
					b.maxSched = d
				}
				if mark {
					a.schedIn.add(a.root[g], d)
				} else {
					a.schedOut.add(a.root[g], d)
				}
			}
		case trace.GoWaiting:
			if k, ok := a.blockedOn[g]; ok && to == trace.GoRunnable {
				if mark {
					a.blockIn.add(k, d)
					if strings.HasPrefix(k, "sync |") {
						a.locksIn.add(k, d)
					}
					if strings.HasPrefix(k, "sync |") && d > 10*time.Millisecond {
						a.wakers.add(a.root[ev.Goroutine()]+" | "+frames(ev.Stack(), 6), d)
					}
				} else {
					a.blockOut.add(k, d)
					if strings.HasPrefix(k, "sync |") {
						a.locksOut.add(k, d)
					}
				}
			}
			delete(a.blockedOn, g)
		}
		if to == trace.GoWaiting {
			a.blockedOn[g] = st.Reason + " | " + a.root[g] + " | " + frames(st.Stack, 7)
		}
	}
}

func (a *analysis) report(w io.Writer, timeline bool) {
	sec := func(t trace.Time) float64 { return time.Duration(t - a.t0).Seconds() }
	for _, m := range a.marks {
		fmt.Fprintf(w, "GC mark phase %.3f–%.3f s (%.0f ms)\n", sec(m.a), sec(m.b), ms(m.b.Sub(m.a)))
	}
	if timeline {
		a.printTimeline(w)
	}
	a.printSummary(w)
	a.printAssists(w)
	table(w, "time runnable before running, in the mark phase, by the function the goroutine started in", a.schedIn, 15)
	table(w, "the same outside the mark phase", a.schedOut, 10)
	table(w, "blocking waits that ended in the mark phase (reason | root | stack)", a.blockIn, 30)
	table(w, "waits on a mutex that ended in the mark phase", a.locksIn, 10)
	table(w, "who woke the goroutines that waited over 10 ms on a mutex in the mark phase", a.wakers, 10)
	table(w, "waits on a mutex that ended outside the mark phase", a.locksOut, 10)
	table(w, "blocking waits that ended outside the mark phase", a.blockOut, 15)
}

// printSummary compares the mark phase's steps with the others: Ps the
// goroutines held against cores the process really had.
func (a *analysis) printSummary(w io.Writer) {
	var n, run, samples [2]float64
	for _, b := range a.steps {
		i := 0
		if b.mark {
			i = 1
		}
		n[i]++
		samples[i] += float64(b.samples)
		for _, d := range b.running {
			run[i] += float64(d)
		}
	}
	fmt.Fprintln(w, "\n== Ps held by running goroutines vs cores on the CPU (CPU samples; 0 without them)")
	for i, what := range []string{"outside the mark phase", "in the mark phase"} {
		if n[i] == 0 {
			continue
		}
		fmt.Fprintf(w, "%-24s %4.0f steps: %.2f Ps held, %.2f cores on the CPU\n", what, n[i],
			run[i]/n[i]/float64(step), samples[i]/n[i]/10)
	}
}

// printAssists says how many goroutines paid for the marking and how
// much: a goroutine's first allocation in a mark phase makes it owe at
// least 64 KiB of scan work (the runtime's gcOverAssistWork), however
// little it allocated, unless the background workers' credit covers it,
// so many goroutines that each allocate a little can cost more than a few
// that allocate much.
func (a *analysis) printAssists(w io.Writer) {
	var n int
	var sum time.Duration
	for _, x := range a.assistsByRoot {
		n += x.n
		sum += x.sum
	}
	fmt.Fprintf(w, "\n== mark assists: %d, %.1f ms in all, by %d goroutines (%.3f ms each on average)\n",
		n, ms(sum), len(a.assisted), ms(sum)/float64(max(len(a.assisted), 1)))
	table(w, "mark assists by the function the goroutine started in", a.assistsByRoot, 15)
	table(w, "mark assists by where they began (the allocation's callers)", a.assistsBySite, 20)
}

func (a *analysis) printTimeline(w io.Writer) {
	var keys []int
	for k := range a.steps {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	kinds := []string{"nats-server", "http+rpc", "gc", "runtime", "other"}
	fmt.Fprintf(w, "\n   t s  mark  runnable  max wait   assists | Ps held: %s | cores on CPU | new conns, TLS handshake cores\n", strings.Join(kinds, " "))
	for _, k := range keys {
		b := a.steps[k]
		mark := "    "
		if b.mark {
			mark = "mark"
		}
		fmt.Fprintf(w, "%6.1f  %s  %8.1f  %6.1f ms  %6.2f  |", float64(k)*step.Seconds(), mark,
			float64(b.runq)/float64(step), ms(b.maxSched), float64(b.assist)/float64(step))
		for _, kd := range kinds {
			fmt.Fprintf(w, " %5.2f", float64(b.running[kd])/float64(step))
		}
		fmt.Fprintf(w, " | %4.1f | %4d %4.1f\n", float64(b.samples)/10, b.conns, float64(b.tls)/10)
	}
}

func table(w io.Writer, title string, m byKey, top int) {
	type kv struct {
		k string
		w *waits
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].w.sum > l[j].w.sum })
	fmt.Fprintf(w, "\n== %s\n", title)
	for i, x := range l {
		if i == top {
			break
		}
		fmt.Fprintf(w, "%6d  sum %9.1f ms  p50 %7.2f ms  p99 %8.2f ms  max %8.2f ms  %s\n",
			x.w.n, ms(x.w.sum), ms(x.w.pct(.5)), ms(x.w.pct(.99)), ms(x.w.pct(1)), x.k)
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// last is the outermost function of s: where the goroutine started.
func last(s trace.Stack) string {
	var r string
	for f := range s.Frames() {
		r = short(f.Func)
	}
	return r
}

// allocSite is the innermost n frames of s outside the runtime: the code
// whose allocation made its goroutine assist.
func allocSite(s trace.Stack, n int) string {
	var out []string
	for f := range s.Frames() {
		if len(out) == 0 && strings.HasPrefix(f.Func, "runtime.") {
			continue
		}
		out = append(out, fmt.Sprintf("%s:%d", short(f.Func), f.Line))
		if len(out) == n {
			break
		}
	}
	return strings.Join(out, " < ")
}

// frames is the innermost n frames of s, the first without its line.
func frames(s trace.Stack, n int) string {
	var out []string
	for f := range s.Frames() {
		if len(out) == 0 {
			out = append(out, short(f.Func))
		} else {
			out = append(out, fmt.Sprintf("%s:%d", short(f.Func), f.Line))
		}
		if len(out) == n {
			break
		}
	}
	return strings.Join(out, " < ")
}

func short(fn string) string {
	return strings.NewReplacer(
		"github.com/nats-io/nats-server/v2/server.", "nsrv.",
		"github.com/nats-io/nats%2ego.", "nats.",
		"github.com/outposthq/outpost/", "op/",
	).Replace(fn)
}
