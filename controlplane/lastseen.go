package controlplane

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// seenFlushInterval is how often every agent's lastSeen is written to the
// lastSeen bucket, besides the record's on every presence change and at
// Close: after a control plane stopped without Close, an agent that does
// not come back shows a lastSeen at most this old.
const seenFlushInterval = time.Minute

// seenShards is how many keys of the lastSeen bucket a workspace's agents
// are spread over: at 100,000 agents in one workspace a shard holds about
// 6,250, at most about 500 KB with IDs of 63 characters, under a NATS
// message's default 1 MB.
//
// A flush used to update each agent's record instead: at 10,000 agents
// that was 10,000 reads, updates and JSON round trips a minute, about two
// thirds of what serve allocated with the fleet idle and a fifth of its
// CPU (issue 20, BENCHMARKS.md). Now it is one write per shard.
const seenShards = 16

// seenShard is one key of the lastSeen bucket: when each of its agents (by
// ID) was last heard from, in Unix milliseconds.
type seenShard map[string]int64

// seenKey is the lastSeen bucket's key of ag's shard.
func seenKey(ag subjects.Agent) string {
	h := fnv.New32a()
	h.Write([]byte(ag.ID))
	return ag.Workspace + "." + strconv.Itoa(int(h.Sum32()%seenShards))
}

// seenWriteTimeout bounds one agent's write (read the record, update it),
// and one shard's read and write in a snapshot. Each write has its own: a
// burst of thousands of changes (a fleet
// connecting) used to share one budget, and every write after it ran out
// failed at once. A variable for tests (a writer reads it when made).
var seenWriteTimeout = 10 * time.Second

// seenRetryDelay is how long the writes that failed wait before they are
// tried again (with whatever was marked meanwhile).
var seenRetryDelay = time.Second

// seenWriter keeps the agent records' lastSeen and hello facts up to date
// from presence, off the presence callback (which must never block).
type seenWriter struct {
	s    *Server
	wake chan struct{}
	stop chan struct{}
	done chan struct{}

	timeout atomic.Int64 // seenWriteTimeout, in nanoseconds

	mu     sync.Mutex
	dirty  map[subjects.Agent]struct{}
	closed bool
}

func newSeenWriter(s *Server) *seenWriter {
	w := &seenWriter{
		s:     s,
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		dirty: map[subjects.Agent]struct{}{},
	}
	w.timeout.Store(int64(seenWriteTimeout))
	go w.run()
	return w
}

// mark queues ag for a write; it never blocks.
func (w *seenWriter) mark(ag subjects.Agent) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.dirty[ag] = struct{}{}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *seenWriter) run() {
	defer close(w.done)
	t := time.NewTicker(seenFlushInterval)
	defer t.Stop()
	var retry <-chan time.Time
	for {
		select {
		case <-w.stop:
			return
		case <-w.wake:
			if retry == nil && w.flushDirty() {
				retry = time.After(seenRetryDelay)
			}
		case <-retry:
			retry = nil
			if w.flushDirty() {
				retry = time.After(seenRetryDelay)
			}
		case <-t.C:
			if err := w.snapshot(); err != nil {
				w.s.log.Warn("store agents' lastSeen", "err", err)
			}
		}
	}
}

// flushDirty writes every agent marked since the last flush. The writes
// that fail are marked again, and it reports whether there were any: the
// caller tries them again after seenRetryDelay (not at once: a store that
// fails now most likely fails a moment later too). One warning says how
// many failed, not one per agent.
func (w *seenWriter) flushDirty() (failed bool) {
	w.mu.Lock()
	dirty := maps.Clone(w.dirty)
	clear(w.dirty)
	w.mu.Unlock()
	var failures []subjects.Agent
	var firstErr error
	for ag := range dirty {
		select {
		case <-w.stop:
			// close writes what is still marked: mark again what this
			// flush has not written.
			w.mu.Lock()
			maps.Copy(w.dirty, dirty)
			w.mu.Unlock()
			return false
		default:
		}
		delete(dirty, ag)
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(w.timeout.Load()))
		err := w.write(ctx, ag)
		cancel()
		if err != nil {
			failures = append(failures, ag)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if len(failures) == 0 {
		return false
	}
	w.mu.Lock()
	for _, ag := range failures {
		w.dirty[ag] = struct{}{}
	}
	w.mu.Unlock()
	w.s.log.Warn("store agent lastSeen (will retry)", "failed", len(failures), "of", len(dirty), "first", failures[0], "err", firstErr)
	return true
}

// snapshot writes when presence last heard from each agent to the lastSeen
// bucket, a key per shard of each workspace (seenKey). An agent keeps the
// stored time when that is newer: presence seeded from older records (its
// read of the bucket failed at start), or another replica that heard the
// agent later, must not move it back. Agents presence does not know
// (revoked) drop out. Each shard's read and write get their own time
// budget.
func (w *seenWriter) snapshot() error {
	shards := map[string]seenShard{}
	w.s.presence.EachSeen(func(ag subjects.Agent, at time.Time) {
		if at.IsZero() {
			return
		}
		key := seenKey(ag)
		if shards[key] == nil {
			shards[key] = seenShard{}
		}
		shards[key][ag.ID] = at.UnixMilli()
	})
	var errs []error
	for key, shard := range shards {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(w.timeout.Load()))
		var stored seenShard
		if _, err := kvjson.Get(ctx, w.s.st.lastSeen, key, &stored); err == nil {
			for id, ms := range shard {
				shard[id] = max(ms, stored[id])
			}
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			// Unreadable: written over, as a shard the next flush fixes.
			w.s.log.Warn("read agents' lastSeen shard", "shard", key, "err", err)
		}
		if _, err := kvjson.Put(ctx, w.s.st.lastSeen, key, shard); err != nil {
			errs = append(errs, fmt.Errorf("shard %s: %w", key, err))
		}
		cancel()
	}
	return errors.Join(errs...)
}

// lastSeenSnapshots reads the lastSeen bucket: when each agent was last
// heard from, as of the last snapshot.
func (s *Server) lastSeenSnapshots(ctx context.Context) (map[subjects.Agent]time.Time, error) {
	seen := map[subjects.Agent]time.Time{}
	err := kvjson.List(ctx, s.st.lastSeen, ">", func(key string, _ uint64, shard *seenShard) {
		ws, _, ok := strings.Cut(key, ".")
		if !ok {
			return
		}
		for id, ms := range *shard {
			ag := subjects.Agent{Workspace: ws, ID: id}
			if at := time.UnixMilli(ms).UTC(); at.After(seen[ag]) {
				seen[ag] = at
			}
		}
	})
	return seen, err
}

// write stores presence's lastSeen and latest hello of ag when they are
// newer than the record's. An agent revoked or gone is no failure: there
// is nothing to keep.
func (w *seenWriter) write(ctx context.Context, ag subjects.Agent) error {
	for attempt := 0; ; attempt++ {
		rec, rev, err := w.s.enrolledAgent(ctx, ag)
		if errors.Is(err, wire.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read agent %s: %w", agentKey(ag), err)
		}
		e := w.s.presence.Get(ag)
		changed := false
		if e.LastSeen.After(rec.LastSeen) {
			rec.LastSeen = e.LastSeen.UTC()
			changed = true
		}
		if h := e.Hello; h != nil && (h.Instance != rec.Instance || h.Version != rec.Version || h.Protocol != rec.Protocol || h.OS != rec.OS ||
			h.Arch != rec.Arch || h.Hostname != rec.Hostname || !maps.Equal(h.Capabilities, rec.Capabilities)) {
			rec.Instance, rec.Version, rec.OS, rec.Arch, rec.Hostname = h.Instance, h.Version, h.OS, h.Arch, h.Hostname
			rec.Protocol = h.Protocol
			rec.Capabilities = maps.Clone(h.Capabilities)
			changed = true
		}
		if !changed {
			return nil
		}
		_, err = kvjson.Update(ctx, w.s.st.agents, agentKey(ag), rec, rev)
		if err == nil {
			return nil
		}
		if !isRevisionMismatch(err) || attempt == 2 {
			return fmt.Errorf("update agent %s: %w", agentKey(ag), err)
		}
	}
}

// close stops the writer, writes the records still marked, and the lastSeen
// of every agent one last time.
func (w *seenWriter) close(ctx context.Context) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	// The snapshot first: every agent's lastSeen in a few writes, before
	// ctx can run out on the records.
	if err := w.snapshot(); err != nil {
		w.s.log.Warn("store agents' lastSeen", "err", err)
	}
	w.mu.Lock()
	dirty := maps.Clone(w.dirty)
	clear(w.dirty)
	w.mu.Unlock()
	for ag := range dirty {
		if err := w.write(ctx, ag); err != nil {
			w.s.log.Warn("store agent lastSeen", "agent", ag, "err", err)
		}
	}
}
