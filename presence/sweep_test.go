package presence_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// change is one OnChange call: whose status, which, and when (since t0).
type change struct {
	agent  string
	status presence.Status
	at     time.Duration
}

// recordChanges registers an OnChange callback on tr that keeps every
// call, timed by clk since t0; the returned func gives those so far.
func recordChanges(tr *presence.Tracker, clk *clock, t0 time.Time) func() []change {
	var mu sync.Mutex
	var got []change
	tr.OnChange(func(ag subjects.Agent, e presence.Entry) {
		mu.Lock()
		got = append(got, change{ag.ID, e.Status, clk.Now().Sub(t0)})
		mu.Unlock()
	})
	return func() []change {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// TestSweepReportsOnTime checks that lapsed leases and closed reconnect
// windows are reported at the sweep that first sees them, whatever set the
// lease, while sweeps with nothing due look at no agent. An agent with a
// 60 s lease is known first, so the first sweep expects nothing for a
// minute; then another agent's lease is set to end sooner.
func TestSweepReportsOnTime(t *testing.T) {
	conn := &wire.ConnRef{Server: "NSERVER", ID: 7}
	hello := func(t *testing.T, tr *presence.Tracker, ag subjects.Agent, hbMs int64) {
		t.Helper()
		if err := tr.Observe(ag, subjects.KindHello, mustMarshal(t, &wire.Hello{Instance: "a", HeartbeatMs: hbMs, Conn: conn})); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		before func(*testing.T, *presence.Tracker, subjects.Agent) // at t0, before the first sweep
		at1s   func(*testing.T, *presence.Tracker, subjects.Agent) // one second later
		want   []change                                            // of agent "x"
		scans  int                                                 // sweeps that look at every agent
	}{
		{
			name:  "a hello after the sweep, with a 3 s lease",
			at1s:  func(t *testing.T, tr *presence.Tracker, x subjects.Agent) { hello(t, tr, x, 1000) },
			want:  []change{{"x", presence.Online, time.Second}, {"x", presence.Reconnecting, 4 * time.Second}, {"x", presence.Offline, 34 * time.Second}},
			scans: 3, // the first, at 4 s, at 34 s
		},
		{
			name: "a later lease set after a sooner one",
			at1s: func(t *testing.T, tr *presence.Tracker, x subjects.Agent) {
				hello(t, tr, x, 1000) // lapses at 4 s
				long := subjects.Agent{Workspace: "w1", ID: "long"}
				if err := tr.Observe(long, subjects.KindHeartbeat, mustMarshal(t, &wire.Heartbeat{Instance: "a", IntervalMs: 20000})); err != nil {
					t.Fatal(err)
				}
			},
			want:  []change{{"x", presence.Online, time.Second}, {"x", presence.Reconnecting, 4 * time.Second}, {"x", presence.Offline, 34 * time.Second}},
			scans: 3,
		},
		{
			name:   "its connection closed",
			before: func(t *testing.T, tr *presence.Tracker, x subjects.Agent) { hello(t, tr, x, 20000) },
			at1s:   func(_ *testing.T, tr *presence.Tracker, x subjects.Agent) { tr.Disconnected(x, *conn) },
			want:   []change{{"x", presence.Online, 0}, {"x", presence.Reconnecting, time.Second}, {"x", presence.Offline, 31 * time.Second}},
			scans:  2, // the first, at 31 s
		},
		{
			name:   "a call found nobody serving it",
			before: func(t *testing.T, tr *presence.Tracker, x subjects.Agent) { hello(t, tr, x, 20000) },
			at1s:   func(_ *testing.T, tr *presence.Tracker, x subjects.Agent) { tr.Lapse(x, "a") },
			want:   []change{{"x", presence.Online, 0}, {"x", presence.Reconnecting, time.Second}, {"x", presence.Offline, 31 * time.Second}},
			scans:  2, // the first, at 31 s
		},
		{
			name: "seeded after a restart, seen 10 s before it",
			at1s: func(_ *testing.T, tr *presence.Tracker, x subjects.Agent) {
				// at t0+1s; the window closes 30 s after lastSeen: t0+20s
				tr.Seed(x, time.Unix(1_700_000_000, 0).Add(-10*time.Second), nil)
			},
			want:  []change{{"x", presence.Offline, 20 * time.Second}},
			scans: 2, // the first, at 20 s
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(1_700_000_000, 0)
			clk := &clock{t: t0}
			tr := presence.New(presence.Config{Now: clk.Now})
			defer tr.Close()
			changes := recordChanges(tr, clk, t0)
			long := subjects.Agent{Workspace: "w1", ID: "long"}
			x := subjects.Agent{Workspace: "w1", ID: "x"}
			hello(t, tr, long, 20000) // a 60 s lease
			if tt.before != nil {
				tt.before(t, tr, x)
			}
			tr.SweepOnce()
			const step = 100 * time.Millisecond
			for clk.Now().Sub(t0) < 40*time.Second {
				clk.Add(step)
				if clk.Now().Sub(t0) == time.Second {
					tt.at1s(t, tr, x)
				}
				tr.SweepOnce()
			}
			// In order: the callbacks run on this goroutine, as the clock moves.
			want := append([]change{{"long", presence.Online, 0}}, tt.want...)
			if got := changes(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("changes reported:\n got %v\nwant %v", got, want)
			}
			// 401 sweeps; only the first and those at a change look at the agents.
			if n := tr.Scans(); n != tt.scans {
				t.Fatalf("%d sweeps looked at every agent, want %d", n, tt.scans)
			}
		})
	}
}

// BenchmarkSweepIdle is one sweep of 10,000 online agents whose leases are
// not due: what the tracker's goroutine does ten times a second at idle.
func BenchmarkSweepIdle(b *testing.B) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	tr := presence.New(presence.Config{Now: clk.Now})
	defer tr.Close()
	data := mustMarshal(b, &wire.Hello{Instance: "a", HeartbeatMs: 20000})
	for i := range 10_000 {
		if err := tr.Observe(subjects.Agent{Workspace: "w1", ID: fmt.Sprintf("a%d", i)}, subjects.KindHello, data); err != nil {
			b.Fatal(err)
		}
	}
	tr.SweepOnce()
	b.ResetTimer()
	for range b.N {
		tr.SweepOnce()
	}
}

// TestSweepAfterClockWentBack checks that a clock set back before the last
// scan makes the next sweep look again: what Get says and what OnChange
// reported agree once more.
func TestSweepAfterClockWentBack(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	clk := &clock{t: t0}
	tr := presence.New(presence.Config{Now: clk.Now})
	defer tr.Close()
	changes := recordChanges(tr, clk, t0)
	if err := tr.Observe(ag, subjects.KindHello, mustMarshal(t, &wire.Hello{Instance: "a", HeartbeatMs: 1000})); err != nil {
		t.Fatal(err)
	}
	clk.Add(40 * time.Second) // lease lapsed at 3 s, window closed at 33 s
	tr.SweepOnce()
	clk.Add(-38 * time.Second) // back to 2 s: within the lease again
	tr.SweepOnce()
	want := []change{{"laptop", presence.Online, 0}, {"laptop", presence.Offline, 40 * time.Second}, {"laptop", presence.Online, 2 * time.Second}}
	if got := changes(); fmt.Sprint(got) != fmt.Sprint(want) || tr.Get(ag).Status != presence.Online {
		t.Fatalf("reported %v, Get says %s; want %v and online", got, tr.Get(ag).Status, want)
	}
}
