package controlplane

import (
	"context"
	"sync"
	"time"

	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/routing"
)

// Background snapshots of sessions with snapshotEveryMs: a tick looks at
// every session; one whose last snapshot is older than its interval and
// whose active backend is online gets a snapshot of its root, and its
// periodic snapshots beyond the newest keepPeriodic are deleted (their
// chunks collected). Every control-plane replica runs this loop; with
// several, a session may get a snapshot from each.
const (
	periodicTick = time.Second
	keepPeriodic = 3
)

// periodic is the loop's state; the Server owns its goroutines.
type periodic struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	last    map[string]time.Time // by session UID: the last attempt
	running map[string]bool
}

// startPeriodic starts the loop; stopPeriodic ends it and waits.
func (s *Server) startPeriodic() {
	ctx, cancel := context.WithCancel(context.Background())
	s.periodic = &periodic{cancel: cancel, last: map[string]time.Time{}, running: map[string]bool{}}
	s.periodic.wg.Add(1)
	go func() {
		defer s.periodic.wg.Done()
		t := time.NewTicker(periodicTick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.periodicRound(ctx)
			}
		}
	}()
}

func (s *Server) stopPeriodic() {
	if s.periodic != nil {
		s.periodic.cancel()
		s.periodic.wg.Wait()
	}
}

// periodicRound starts the snapshots that are due.
func (s *Server) periodicRound(ctx context.Context) {
	var due []*routing.State
	err := kvjson.List(ctx, s.st.sessions, ">", func(_ string, _ uint64, st *routing.State) {
		if st.SnapshotEveryMs > 0 {
			due = append(due, st)
		}
	})
	if err != nil {
		s.log.Debug("periodic snapshots: list sessions", "err", err)
		return
	}
	p := s.periodic
	now := time.Now()
	for _, st := range due {
		ag, ok := st.Agent(st.Active)
		p.mu.Lock()
		skip := p.running[st.UID] || now.Sub(p.last[st.UID]) < time.Duration(st.SnapshotEveryMs)*time.Millisecond
		if !skip && ok && s.presence.Get(ag).Status == presence.Online {
			p.running[st.UID], p.last[st.UID] = true, now
			p.wg.Add(1)
			go s.periodicSnapshot(ctx, st)
		}
		p.mu.Unlock()
	}
}

// periodicSnapshot takes one session's snapshot and prunes the old ones.
func (s *Server) periodicSnapshot(ctx context.Context, st *routing.State) {
	p := s.periodic
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.running, st.UID)
		p.mu.Unlock()
	}()
	ag, _ := st.Agent(st.Active)
	ctx, cancel := context.WithTimeout(ctx, snapScanTimeout)
	defer cancel()
	sn, err := s.takeSnapshot(ctx, agentTarget{rpc: s.rpc, ag: ag}, snapshotSpec{
		ws: st.Workspace, agent: ag.ID, session: st.ID, backend: st.Active, kind: snapPeriodic})
	if err != nil {
		s.log.Warn("periodic snapshot failed", "ws", st.Workspace, "session", st.ID, "backend", st.Active, "err", err)
		return
	}
	s.log.Debug("periodic snapshot", "ws", st.Workspace, "session", st.ID, "snapshot", sn.ID, "newBytes", sn.NewBytes)
	snaps, err := s.snaps.list(ctx, st.Workspace)
	if err != nil {
		return
	}
	var mine []string
	for _, o := range snaps {
		if o.Session == st.ID && o.Kind == snapPeriodic {
			mine = append(mine, o.ID)
		}
	}
	for _, id := range mine[:max(len(mine)-keepPeriodic, 0)] {
		if err := s.snaps.remove(ctx, st.Workspace, id); err != nil {
			s.log.Warn("prune periodic snapshot", "ws", st.Workspace, "snapshot", id, "err", err)
		}
	}
}
