package controlplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// seenFlushInterval is how often lastSeen of every agent is written back to
// KV, besides on every presence change and at Close.
const seenFlushInterval = time.Minute

// seenFlushPace spaces the periodic writes: thousands of agents written at
// once would queue every call's KV and NATS traffic behind them. The writes
// of one flush take at most half the interval, so a larger fleet is written
// faster. Changes marked meanwhile wait for the flush to end.
const seenFlushPace = 5 * time.Millisecond

// seenWriteTimeout bounds one agent's write (read the record, update it).
// Each write has its own: a burst of thousands of changes (a fleet
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
			w.flushAll(context.Background(), seenFlushPace)
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
			// close writes everything presence knows; the rest of
			// this flush would only be written twice.
			return false
		default:
		}
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

// flushAll writes every agent whose presence is newer than its record, one
// every pace at most (0: at once), until done or the writer stops.
func (w *seenWriter) flushAll(ctx context.Context, pace time.Duration) {
	var ags []subjects.Agent
	err := kvjson.List(ctx, w.s.st.agents, ">", func(_ string, _ uint64, rec *agentRecord) {
		if !rec.Revoked {
			ags = append(ags, rec.agent())
		}
	})
	if err != nil {
		w.s.log.Warn("list agents for lastSeen", "err", err)
		return
	}
	if len(ags) > 0 && pace > 0 {
		pace = min(pace, seenFlushInterval/2/time.Duration(len(ags)))
	}
	var tick <-chan time.Time
	if pace > 0 {
		t := time.NewTicker(pace)
		defer t.Stop()
		tick = t.C
	}
	var failed int
	var first subjects.Agent
	var firstErr error
	for _, ag := range ags {
		if tick != nil {
			select {
			case <-w.stop:
				return
			case <-tick:
			}
		}
		if err := w.write(ctx, ag); err != nil {
			if failed == 0 {
				first, firstErr = ag, err
			}
			failed++
		}
	}
	if failed > 0 {
		w.s.log.Warn("store agent lastSeen", "failed", failed, "of", len(ags), "first", first, "err", firstErr)
	}
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

// close stops the writer and writes what presence knows one last time.
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
	w.flushAll(ctx, 0)
}
