package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime/metrics"
	"sync"
	"time"
)

// cpMetrics is what `outpost serve --pprof` answers on /debug/metrics (see
// cmd/outpost/metrics.go): runtime figures and the control plane's counters.
type cpMetrics struct {
	Runtime    map[string]float64 `json:"runtime"`
	Histograms map[string]struct {
		Counts  []uint64  `json:"counts"`
		Buckets []float64 `json:"buckets"`
	} `json:"histograms"`
	Outpost struct {
		PresenceMessages uint64         `json:"presence_messages"`
		Agents           map[string]int `json:"agents"`
		NATSConnections  int            `json:"nats_connections"`
	} `json:"outpost"`
}

// cpSample is the control plane's figures at one moment.
type cpSample struct {
	at time.Time
	// The fleet's CPU and this process's (the driver), to tell what the
	// machine's cores went to.
	fleetCPU, selfCPU time.Duration
	cpu               time.Duration // of the process, from /proc
	rss               int64
	m                 cpMetrics
	self              cpMetrics   // this process's (the driver's) runtime figures
	fleetM            []cpMetrics // each fleet process's, in order (nil Runtime: it did not answer)
}

var metricsClient = &http.Client{Timeout: 5 * time.Second}

// sample reads the control plane's figures now.
func (p *serveProc) sample(fl *fleet) (cpSample, error) {
	s := cpSample{at: time.Now(), cpu: p.cpuTime(), selfCPU: procCPU(os.Getpid()), self: selfMetrics()}
	if fl != nil {
		s.fleetCPU = fl.cpu()
		s.fleetM = fl.metrics()
	}
	s.rss, _ = p.memory()
	resp, err := metricsClient.Get("http://" + p.pprof + "/debug/metrics")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("metrics: %s", resp.Status)
	}
	return s, json.NewDecoder(resp.Body).Decode(&s.m)
}

// cpWatch samples the control plane every half second until stop, keeping
// the peaks between the samples.
type cpWatch struct {
	first, last cpSample
	peakRSS     int64
	peakG       float64
	samples     []cpSample // every sample, the first included
	dials       int64      // driverDials at the start
	quit, done  chan struct{}
	mu          sync.Mutex
}

func watchCP(p *serveProc, fl *fleet) *cpWatch {
	w := &cpWatch{quit: make(chan struct{}), done: make(chan struct{}), dials: driverDials.Load()}
	w.first, _ = p.sample(fl)
	w.last = w.first
	w.samples = []cpSample{w.first}
	w.peakRSS, w.peakG = w.first.rss, w.first.m.Runtime["/sched/goroutines:goroutines"]
	go func() {
		defer close(w.done)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-w.quit:
				s, err := p.sample(fl)
				if err == nil {
					w.note(s)
				}
				return
			case <-t.C:
			}
			if s, err := p.sample(fl); err == nil {
				w.note(s)
			}
		}
	}()
	return w
}

func (w *cpWatch) note(s cpSample) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = s
	w.samples = append(w.samples, s)
	w.peakRSS = max(w.peakRSS, s.rss)
	w.peakG = max(w.peakG, s.m.Runtime["/sched/goroutines:goroutines"])
}

// stop ends the watch and returns what the control plane did over it.
func (w *cpWatch) stop() cpFigures {
	close(w.quit)
	<-w.done
	a, b := w.first, w.last
	span := b.at.Sub(a.at).Seconds()
	f := cpFigures{
		span:         b.at.Sub(a.at),
		cores:        (b.cpu - a.cpu).Seconds() / span,
		fleet:        (b.fleetCPU - a.fleetCPU).Seconds() / span,
		driver:       (b.selfCPU - a.selfCPU).Seconds() / span,
		peakRSS:      w.peakRSS,
		peakG:        int(w.peakG),
		gcCycles:     int(b.m.Runtime["/gc/cycles/total:gc-cycles"] - a.m.Runtime["/gc/cycles/total:gc-cycles"]),
		presence:     float64(b.m.Outpost.PresenceMessages-a.m.Outpost.PresenceMessages) / span,
		allocBytes:   b.m.Runtime["/gc/heap/allocs:bytes"] - a.m.Runtime["/gc/heap/allocs:bytes"],
		allocObjects: b.m.Runtime["/gc/heap/allocs:objects"] - a.m.Runtime["/gc/heap/allocs:objects"],
		dials:        driverDials.Load() - w.dials,
	}
	if total := b.m.Runtime["/cpu/classes/total:cpu-seconds"] - a.m.Runtime["/cpu/classes/total:cpu-seconds"]; total > 0 {
		f.gcShare = (b.m.Runtime["/cpu/classes/gc/total:cpu-seconds"] - a.m.Runtime["/cpu/classes/gc/total:cpu-seconds"]) / total
	}
	f.assist = b.m.Runtime["/cpu/classes/gc/mark/assist:cpu-seconds"] - a.m.Runtime["/cpu/classes/gc/mark/assist:cpu-seconds"]
	f.pauseMax = histDelta(a.m, b.m, "/sched/pauses/total/gc:seconds", 100)
	f.schedP99 = histDelta(a.m, b.m, "/sched/latencies:seconds", 99)
	return f
}

// histDelta is the pct percentile (an upper bucket bound) of what the
// histogram name counted between a and b.
func histDelta(a, b cpMetrics, name string, pct float64) time.Duration {
	ha, hb := a.Histograms[name], b.Histograms[name]
	if len(hb.Counts) == 0 || len(ha.Counts) != len(hb.Counts) {
		return 0
	}
	d := make([]uint64, len(hb.Counts))
	var total uint64
	for i := range d {
		d[i] = hb.Counts[i] - ha.Counts[i]
		total += d[i]
	}
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(pct / 100 * float64(total)))
	var run uint64
	for i, c := range d {
		run += c
		if run >= want {
			return time.Duration(hb.Buckets[min(i+1, len(hb.Buckets)-1)] * float64(time.Second))
		}
	}
	return 0
}

// cpFigures is the control plane's own cost over a span.
type cpFigures struct {
	span     time.Duration
	cores    float64 // CPU used, in cores
	fleet    float64 // by the fleet processes
	driver   float64 // by this process
	peakRSS  int64
	peakG    int
	gcCycles int
	gcShare  float64 // of the process's CPU
	assist   float64 // CPU seconds goroutines spent helping the GC mark
	pauseMax time.Duration
	schedP99 time.Duration // goroutines waiting to run
	presence float64       // presence messages a second
	// What the heap allocated over the span (bytes, objects), and the
	// calls due in it when it was a drive (0 when idle): per call, this
	// is what decides how many collections a drive takes (one each time
	// about the live heap is allocated again).
	allocBytes, allocObjects float64
	calls                    int
	// dials is how many connections the driver opened to serve meanwhile
	// (each a TLS handshake with -transport tls, in the figures above).
	dials int64
	// idle is the same figures over a span with the fleet online and no
	// calls, when measured: what a drive's span allocates anyway (presence,
	// the server's pings), taken out of the per-call figures beside them.
	idle *cpFigures
}

func (f cpFigures) String() string {
	return fmt.Sprintf("%.2f cores (fleet %.2f, driver %.2f), RSS %s, %d goroutines, GC %d× (%.0f%% CPU, assists %.2f s, STW max %s), sched p99 %s, presence %.0f msg/s, %s",
		f.cores, f.fleet, f.driver, mib(f.peakRSS), f.peakG, f.gcCycles, f.gcShare*100, f.assist, ms(f.pauseMax), ms(f.schedP99), f.presence, f.allocs())
}

// allocs is what the heap allocated: per call in a drive, per second when
// idle.
func (f cpFigures) allocs() string {
	if f.calls > 0 {
		n := float64(f.calls)
		out := fmt.Sprintf("heap alloc %.1f KiB, %.0f objects per call (%.0f MiB in all)", f.allocBytes/n/1024, f.allocObjects/n, f.allocBytes/(1<<20))
		if i := f.idle; i != nil && i.span > 0 {
			s, is := f.span.Seconds(), i.span.Seconds()
			out += fmt.Sprintf("; beyond idle %.1f KiB, %.0f objects per call (idle %.0f KiB/s, %.0f objects/s)",
				(f.allocBytes-i.allocBytes/is*s)/n/1024, (f.allocObjects-i.allocObjects/is*s)/n, i.allocBytes/is/1024, i.allocObjects/is)
		}
		return out + fmt.Sprintf("; the driver opened %d connections", f.dials)
	}
	s := f.span.Seconds()
	if s <= 0 {
		return "heap alloc —"
	}
	return fmt.Sprintf("heap alloc %.0f KiB/s, %.0f objects/s", f.allocBytes/s/1024, f.allocObjects/s)
}

// selfMetrics reads this process's runtime figures (the driver's) in the
// shape of the control plane's, for histDelta.
func selfMetrics() cpMetrics {
	names := []string{"/gc/cycles/total:gc-cycles", "/sched/pauses/total/gc:seconds", "/sched/latencies:seconds"}
	samples := make([]metrics.Sample, len(names))
	for i, n := range names {
		samples[i].Name = n
	}
	metrics.Read(samples)
	var m cpMetrics
	m.Runtime = map[string]float64{}
	m.Histograms = map[string]struct {
		Counts  []uint64  `json:"counts"`
		Buckets []float64 `json:"buckets"`
	}{}
	for _, s := range samples {
		switch s.Value.Kind() {
		case metrics.KindUint64:
			m.Runtime[s.Name] = float64(s.Value.Uint64())
		case metrics.KindFloat64Histogram:
			h := s.Value.Float64Histogram()
			// JSON has no infinities: as the control plane's handler
			// sends them, an infinite upper edge becomes its neighbour,
			// an infinite lower edge 0 (a percentile in the last bucket
			// then reads as that bucket's lower edge, not MaxFloat64).
			b := append([]float64(nil), h.Buckets...)
			for i := range b {
				if math.IsInf(b[i], 1) && i > 0 {
					b[i] = b[i-1]
				}
				if math.IsInf(b[i], -1) {
					b[i] = 0
				}
			}
			m.Histograms[s.Name] = struct {
				Counts  []uint64  `json:"counts"`
				Buckets []float64 `json:"buckets"`
			}{append([]uint64(nil), h.Counts...), b}
		}
	}
	return m
}
