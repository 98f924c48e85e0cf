package pipe

import (
	"sync"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Flight paces the data frames one side sends over one NATS connection to
// the other (an agent's to one control-plane connection, a control plane's
// to one agent): at most a limit of bytes not yet acknowledged by the
// receiver's FrameAcks, so data never queues long ahead of the requests,
// replies and heartbeats that share the connection. The limit is sized to
// the link: what the acknowledgements say arrives in wire.PipeFlightDelay
// (between wire.PipeFlightMin and wire.PipeFlightMax; wire.PipeFlight at
// first). An acknowledgement lost (a reconnect) only slows a sender down
// for FlightWait.
type Flight struct {
	mu      sync.Mutex
	bytes   int // sent, not yet acknowledged
	limit   int
	changed chan struct{}
	acked   int       // acknowledged since since
	since   time.Time // the start of the rate's sample
	total   int64     // acknowledged in all
}

// FlightWait bounds how long a frame waits for acknowledgements.
const FlightWait = time.Second

// flightSample is how long acknowledgements are counted before the limit
// is sized again; a sample that spans more than flightIdle (the sender
// had nothing to send) sizes nothing.
const (
	flightSample = 100 * time.Millisecond
	flightIdle   = time.Second
)

// NewFlight returns a Flight at wire.PipeFlight.
func NewFlight() *Flight {
	return &Flight{limit: wire.PipeFlight, changed: make(chan struct{})}
}

// Take waits until n more bytes fit (or FlightWait passed) and counts
// them as sent.
func (f *Flight) Take(n int) {
	deadline := time.Now().Add(FlightWait)
	f.mu.Lock()
	for f.bytes > 0 && f.bytes+n > f.limit {
		ch := f.changed
		f.mu.Unlock()
		left := time.Until(deadline)
		if left <= 0 {
			// Acknowledgements were lost (a reconnect; frames of a pipe
			// that ended): forget what they would have said.
			f.mu.Lock()
			f.bytes = 0
			break
		}
		t := time.NewTimer(left)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
		f.mu.Lock()
	}
	f.bytes += n
	f.mu.Unlock()
}

// Ack takes an acknowledgement of n bytes.
func (f *Flight) Ack(n int) { f.ackAt(n, time.Now()) }

// ackAt is Ack at the time now.
func (f *Flight) ackAt(n int, now time.Time) {
	n = min(n, wire.PipeFlightMax)
	f.mu.Lock()
	f.bytes = max(0, f.bytes-n)
	f.acked += n
	f.total += int64(n)
	switch el := now.Sub(f.since); {
	case f.since.IsZero() || el > flightIdle:
		f.since, f.acked = now, 0
	case el >= flightSample:
		f.limit = flightLimit(f.acked, el)
		f.since, f.acked = now, 0
	}
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// Acked is the bytes acknowledged in all.
func (f *Flight) Acked() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total
}

// flightLimit is what arrives in wire.PipeFlightDelay when n bytes
// arrived in el, within wire.PipeFlightMin and wire.PipeFlightMax.
func flightLimit(n int, el time.Duration) int {
	l := float64(n) * float64(wire.PipeFlightDelay) / float64(el)
	return int(min(max(l, wire.PipeFlightMin), wire.PipeFlightMax))
}
