package controlplane

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// TestLastSeenBurstIsWrittenInFull: a fleet that comes online at once marks
// every agent's record for a write. Each write has its own time budget and
// one that fails is tried again, so every record gets its lastSeen and
// hello facts, however long the whole burst takes. (With one budget for the
// burst, the writes after it ran out failed and were dropped until the
// next minute's flush: 887 and 9,457 log lines at 10,000 agents.)
func TestLastSeenBurstIsWrittenInFull(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLong)
	defer cancel()
	if _, err := adminClient(s).CreateWorkspace(ctx, "burst"); err != nil {
		t.Fatal(err)
	}
	// Records written straight into the store: enrolling a thousand agents
	// through the API would test enrollment, not this.
	const n = 1000
	ags := make([]subjects.Agent, n)
	for i := range ags {
		ags[i] = subjects.Agent{Workspace: "burst", ID: fmt.Sprintf("a%04d", i)}
		rec := agentRecord{Workspace: "burst", ID: ags[i].ID, Name: ags[i].ID, EnrolledAt: time.Now().UTC()}
		if _, err := kvjson.Create(ctx, s.st.agents, agentKey(ags[i]), &rec); err != nil {
			t.Fatal(err)
		}
	}
	// A budget that one write fits in many times over, and the burst not.
	s.seen.timeout.Store(int64(100 * time.Millisecond))
	h := mockHello
	h.Instance = "i1"
	h.Protocol = wire.Version
	hello, err := wire.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	// The hellos as the presence subscriber hands them over.
	for _, ag := range ags {
		if err := s.presence.Observe(ag, subjects.KindHello, hello); err != nil {
			t.Fatal(err)
		}
	}
	waitWritten(t, ctx, s, ags, 20*time.Second)
}

// waitWritten waits until every one of ags has its record's lastSeen and
// the hello's facts, failing the test after d.
func waitWritten(t *testing.T, ctx context.Context, s *Server, ags []subjects.Agent, d time.Duration) {
	t.Helper()
	missing := func() (left int, first string) {
		for _, ag := range ags {
			var rec agentRecord
			if _, err := kvjson.Get(ctx, s.st.agents, agentKey(ag), &rec); err != nil {
				t.Fatal(err)
			}
			if rec.LastSeen.IsZero() || rec.Version != "test-1.0" || rec.Hostname != "fakehost" {
				if left == 0 {
					first = fmt.Sprintf("%s: %+v", ag.ID, rec)
				}
				left++
			}
		}
		return left, first
	}
	deadline := time.Now().Add(d)
	for {
		left, first := missing()
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records never got the hello's facts and lastSeen; first: %s", left, len(ags), first)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestLastSeenWriteFailuresAreRetried: writes that fail (here: a store
// that answers nothing in time) are tried again until they succeed, not
// dropped until the next minute's flush of every agent.
func TestLastSeenWriteFailuresAreRetried(t *testing.T) {
	defer func(d time.Duration) { seenRetryDelay = d }(seenRetryDelay)
	seenRetryDelay = 100 * time.Millisecond
	s := startServer(t, testConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLong)
	defer cancel()
	if _, err := adminClient(s).CreateWorkspace(ctx, "retry"); err != nil {
		t.Fatal(err)
	}
	ags := make([]subjects.Agent, 20)
	for i := range ags {
		ags[i] = subjects.Agent{Workspace: "retry", ID: fmt.Sprintf("r%02d", i)}
		rec := agentRecord{Workspace: "retry", ID: ags[i].ID, Name: ags[i].ID, EnrolledAt: time.Now().UTC()}
		if _, err := kvjson.Create(ctx, s.st.agents, agentKey(ags[i]), &rec); err != nil {
			t.Fatal(err)
		}
	}
	s.seen.timeout.Store(1) // every write's budget is over before it starts
	h := mockHello
	h.Instance = "i1"
	h.Protocol = wire.Version
	// A lease far longer than the test: no status change marks the
	// agents again, only the retries can write them.
	h.HeartbeatMs = 60_000
	hello, err := wire.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	for _, ag := range ags {
		if err := s.presence.Observe(ag, subjects.KindHello, hello); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // several flushes, every write failing
	var rec agentRecord
	if _, err := kvjson.Get(ctx, s.st.agents, agentKey(ags[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if !rec.LastSeen.IsZero() {
		t.Fatalf("a write succeeded with no time to do it: %+v", rec)
	}
	s.seen.timeout.Store(int64(10 * time.Second)) // the store answers again
	waitWritten(t, ctx, s, ags, 5*time.Second)
}

// TestLastSeenSnapshot: the minute's flush writes when presence last heard
// from each agent to the lastSeen bucket (one key per shard of its
// workspace), not to each agent's record; a restarted control plane shows
// the newer of the record's lastSeen and the snapshot's.
func TestLastSeenSnapshot(t *testing.T) {
	cfg := testConfig(t)
	s := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if _, err := adminClient(s).CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	ag := subjects.Agent{Workspace: "w1", ID: "laptop"}
	if _, err := kvjson.Create(ctx, s.st.agents, agentKey(ag), &agentRecord{Workspace: "w1", ID: ag.ID, Name: ag.ID, EnrolledAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	h := mockHello
	h.Instance, h.Protocol = "i1", wire.Version
	hello, err := wire.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.presence.Observe(ag, subjects.KindHello, hello); err != nil {
		t.Fatal(err)
	}
	waitWritten(t, ctx, s, []subjects.Agent{ag}, 10*time.Second) // the hello is a change: the record's lastSeen
	var rec agentRecord
	if _, err := kvjson.Get(ctx, s.st.agents, agentKey(ag), &rec); err != nil {
		t.Fatal(err)
	}
	// A heartbeat is no change: only the flush writes it.
	time.Sleep(100 * time.Millisecond)
	beat, err := wire.Marshal(&wire.Heartbeat{Instance: "i1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.presence.Observe(ag, subjects.KindHeartbeat, beat); err != nil {
		t.Fatal(err)
	}
	last := s.presence.Get(ag).LastSeen.Truncate(time.Millisecond)
	if !last.After(rec.LastSeen) {
		t.Fatalf("presence's lastSeen %v is not after the record's %v", last, rec.LastSeen)
	}
	if err := s.seen.snapshot(); err != nil {
		t.Fatal(err)
	}
	var shard seenShard
	if _, err := kvjson.Get(ctx, s.st.lastSeen, seenKey(ag), &shard); err != nil {
		t.Fatalf("the snapshot's shard %s: %v", seenKey(ag), err)
	}
	if got := time.UnixMilli(shard[ag.ID]); !got.Equal(last) {
		t.Fatalf("the snapshot has %s last seen at %v, want %v", ag.ID, got, last)
	}
	var after agentRecord
	if _, err := kvjson.Get(ctx, s.st.agents, agentKey(ag), &after); err != nil {
		t.Fatal(err)
	}
	if !after.LastSeen.Equal(rec.LastSeen) {
		t.Fatalf("the flush wrote the record (lastSeen %v, was %v)", after.LastSeen, rec.LastSeen)
	}
	// Another heartbeat: only Close's snapshot can keep it.
	time.Sleep(100 * time.Millisecond)
	if err := s.presence.Observe(ag, subjects.KindHeartbeat, beat); err != nil {
		t.Fatal(err)
	}
	last = s.presence.Get(ag).LastSeen.Truncate(time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := startServer(t, cfg)
	a, err := adminClient(s2).GetAgent(ctx, "w1", ag.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !a.LastSeen.Equal(last) {
		t.Fatalf("after a restart lastSeen is %v, want the last heartbeat's %v from Close's snapshot (the record has %v)", a.LastSeen, last, rec.LastSeen)
	}
}

// TestLastSeenSnapshotKeepsNewer: a snapshot never moves an agent's stored
// time back (presence seeded from older records, another replica that heard
// the agent later), and drops agents presence does not know (revoked).
func TestLastSeenSnapshotKeepsNewer(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	ag := subjects.Agent{Workspace: "w1", ID: "laptop"}
	now := time.Now()
	s.presence.Seed(ag, now.Add(-time.Hour), nil) // as from an old record
	// An agent presence does not know, in the same shard.
	gone := subjects.Agent{Workspace: "w1"}
	for i := 0; seenKey(gone) != seenKey(ag) || gone.ID == ""; i++ {
		gone.ID = fmt.Sprintf("gone%d", i)
	}
	newer := now.Add(-time.Minute).UnixMilli()
	if _, err := kvjson.Put(ctx, s.st.lastSeen, seenKey(ag), seenShard{ag.ID: newer, gone.ID: newer}); err != nil {
		t.Fatal(err)
	}
	if err := s.seen.snapshot(); err != nil {
		t.Fatal(err)
	}
	var shard seenShard
	if _, err := kvjson.Get(ctx, s.st.lastSeen, seenKey(ag), &shard); err != nil {
		t.Fatal(err)
	}
	if len(shard) != 1 || shard[ag.ID] != newer {
		t.Fatalf("shard after the snapshot: %v, want only %s at the stored %d", shard, ag.ID, newer)
	}
}

// TestLastSeenFlushStoppedKeepsTheRest: a flush of the marked records that
// the writer's stop interrupts leaves what it has not written marked, for
// close to write.
func TestLastSeenFlushStoppedKeepsTheRest(t *testing.T) {
	w := &seenWriter{stop: make(chan struct{}), dirty: map[subjects.Agent]struct{}{}}
	for i := range 5 {
		w.dirty[subjects.Agent{Workspace: "w1", ID: fmt.Sprintf("a%d", i)}] = struct{}{}
	}
	close(w.stop)
	if failed := w.flushDirty(); failed {
		t.Fatal("a flush stopped before any write reported failures")
	}
	if len(w.dirty) != 5 {
		t.Fatalf("%d of 5 agents still marked after a stopped flush, want all", len(w.dirty))
	}
}
