package controlplane

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/subjects"
)

// seenFlushInterval is how often lastSeen of every agent is written back to
// KV, besides on every presence change and at Close.
const seenFlushInterval = time.Minute

// seenFlushPace spaces the periodic writes: thousands of agents written at
// once would queue every call's KV and NATS traffic behind them. The writes
// of one flush take at most half the interval, so a larger fleet is written
// faster. Changes marked meanwhile wait for the flush to end.
const seenFlushPace = 5 * time.Millisecond

// seenWriter keeps the agent records' lastSeen and hello facts up to date
// from presence, off the presence callback (which must never block).
type seenWriter struct {
	s    *Server
	wake chan struct{}
	stop chan struct{}
	done chan struct{}

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
	for {
		select {
		case <-w.stop:
			return
		case <-w.wake:
			w.flushDirty()
		case <-t.C:
			w.flushAll(context.Background(), seenFlushPace)
		}
	}
}

func (w *seenWriter) flushDirty() {
	w.mu.Lock()
	dirty := maps.Clone(w.dirty)
	clear(w.dirty)
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ag := range dirty {
		w.write(ctx, ag)
	}
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
	for _, ag := range ags {
		if tick != nil {
			select {
			case <-w.stop:
				return
			case <-tick:
			}
		}
		w.write(ctx, ag)
	}
}

// write stores presence's lastSeen and latest hello of ag when they are
// newer than the record's.
func (w *seenWriter) write(ctx context.Context, ag subjects.Agent) {
	for attempt := 0; attempt < 3; attempt++ {
		rec, rev, err := w.s.enrolledAgent(ctx, ag)
		if err != nil {
			return // revoked or gone: nothing to keep
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
			return
		}
		_, err = kvjson.Update(ctx, w.s.st.agents, agentKey(ag), rec, rev)
		if err == nil || !isRevisionMismatch(err) {
			if err != nil {
				w.s.log.Warn("store agent lastSeen", "agent", ag, "err", err)
			}
			return
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
