package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"
)

// ratioSpread is how precisely a run's percentile ratio a/b is known: the
// 5th and 95th percentiles of the ratio of percentile p over resamples of
// the run's rounds (a[k] and b[k] are one round's keystrokes of the two
// clients, taken a moment apart, so a round is resampled whole and a
// spell of load weighs on both alike). p99 over 500 keystrokes is the
// 6th slowest of each: a few keystrokes decide it, and this shows by how
// much a run of the same machine might have given another figure. The
// resampling is seeded: a run's interval is the same every time it is
// computed.
func ratioSpread(a, b latencies, p float64, resamples int) (lo, hi float64) {
	n := min(len(a), len(b))
	if n == 0 || resamples < 1 {
		return 0, 0
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ra, rb := make(latencies, n), make(latencies, n)
	rs := make([]float64, 0, resamples)
	for range resamples {
		for i := range n {
			k := rng.IntN(n)
			ra[i], rb[i] = a[k], b[k]
		}
		if y := rb.pct(p); y > 0 {
			rs = append(rs, float64(ra.pct(p))/float64(y))
		}
	}
	if len(rs) == 0 {
		return 0, 0
	}
	slices.Sort(rs)
	// The same rank rule as latencies.pct: index p/100 × (n-1).
	return rs[(len(rs)-1)*5/100], rs[(len(rs)-1)*95/100]
}

// echoResamples is how many resamples ratioSpread takes for the echo
// rows.
const echoResamples = 2000

// echoSamples (-echo-samples FILE) writes every timed keystroke's echo
// time, one a line: transport, round, client, microseconds.
var echoSamples string

// writeEchoSamples appends the run's keystrokes (lat[i][r]: client i's in
// round r) to echoSamples' file.
func writeEchoSamples(transport string, names []string, lat []latencies) error {
	if echoSamples == "" {
		return nil
	}
	f, err := os.OpenFile(echoSamples, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i, l := range lat {
		for r, d := range l {
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", transport, r, names[i], strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 1, 64))
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// byTurn splits two clients' keystrokes of echoLatenciesRun by what came
// just before each: own[i] holds client i's keystrokes that followed its
// own last one (it went first in the round, after going last in the one
// before), other[i] those that followed the other client's (it went
// second). Round 0 follows the warm-up and is in neither. Back to back,
// a keystroke after the same client's finds that client's path still
// warm (its processes' threads just ran, their CPUs awake), one after the
// other's finds it idle for a round of the other client, as every
// keystroke typed by a person finds it; the two halves of one client's
// figures can differ by tens of microseconds on a virtual machine whose
// idle CPUs halt.
func byTurn(lat []latencies) (own, other [2]latencies) {
	if len(lat) != 2 {
		return own, other
	}
	for i := range 2 {
		for r := 1; r < len(lat[i]); r++ {
			if r%2 == i { // first in round r: client r%2 (echoLatenciesRun's order)
				own[i] = append(own[i], lat[i][r])
			} else {
				other[i] = append(other[i], lat[i][r])
			}
		}
	}
	return own, other
}
