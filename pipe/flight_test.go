package pipe

import (
	"testing"
	"time"

	"github.com/outposthq/outpost/wire"
)

// The flight bound follows the rate the acknowledgements report: a fast
// link raises it to the most, a slow uplink lowers it to what arrives in
// wire.PipeFlightDelay, and a pause of the sender sizes nothing.
func TestFlightSizedToTheUplink(t *testing.T) {
	f := NewFlight()
	if f.limit != wire.PipeFlight {
		t.Fatalf("starts at %d, want %d", f.limit, wire.PipeFlight)
	}
	t0 := time.Unix(1000, 0)
	f.ackAt(256<<10, t0) // starts the sample
	// 1 GB/s: 250 ms of it is far over the most.
	f.ackAt(100<<20, t0.Add(100*time.Millisecond))
	if f.limit != wire.PipeFlightMax {
		t.Fatalf("at 1 GB/s: %d, want the most, %d", f.limit, wire.PipeFlightMax)
	}
	// 10 MiB/s for 200 ms: 250 ms of it is 2.5 MiB.
	t1 := t0.Add(100 * time.Millisecond)
	f.ackAt(512<<10, t1.Add(50*time.Millisecond)) // under a sample: nothing yet
	if f.limit != wire.PipeFlightMax {
		t.Fatalf("sized within a sample: %d", f.limit)
	}
	f.ackAt(1536<<10, t1.Add(200*time.Millisecond))
	if want := 5 << 19; f.limit != want {
		t.Fatalf("at 10 MiB/s: %d, want %d", f.limit, want)
	}
	// 100 KiB/s: under the least.
	t2 := t1.Add(200 * time.Millisecond)
	f.ackAt(20<<10, t2.Add(200*time.Millisecond))
	if f.limit != wire.PipeFlightMin {
		t.Fatalf("at 100 KiB/s: %d, want the least, %d", f.limit, wire.PipeFlightMin)
	}
	// A pause of 5 s then one acknowledgement: no rate to size by.
	f.ackAt(256<<10, t2.Add(200*time.Millisecond+5*time.Second))
	if f.limit != wire.PipeFlightMin {
		t.Fatalf("after a pause: %d, want it unchanged", f.limit)
	}
}

// A sender waits while the flight is full and goes on once an
// acknowledgement makes room.
func TestFlightWaitsForAcks(t *testing.T) {
	f := NewFlight()
	f.Take(wire.PipeFlight)
	done := make(chan struct{})
	go func() { f.Take(1); close(done) }()
	select {
	case <-done:
		t.Fatal("took past the bound")
	case <-time.After(100 * time.Millisecond):
	}
	f.Ack(1 << 20)
	select {
	case <-done:
	case <-time.After(FlightWait / 2):
		t.Fatal("still waiting after an acknowledgement made room")
	}
}

// Acknowledgements lost (a reconnect, a pipe that ended): a sender waits
// FlightWait once, then goes on as if the flight were empty.
func TestFlightForgetsLostAcks(t *testing.T) {
	f := NewFlight()
	f.Take(wire.PipeFlight)
	start := time.Now()
	f.Take(1)
	if took := time.Since(start); took < FlightWait/2 {
		t.Fatalf("took past the bound after %v", took)
	}
	start = time.Now()
	f.Take(wire.PipeFlight / 2)
	if took := time.Since(start); took > FlightWait/2 {
		t.Fatalf("waited %v again: the lost acknowledgements were not forgotten", took)
	}
}
