package controlplane

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/routing"
	"github.com/outposthq/outpost/wire"
)

// Background snapshots of sessions with snapshotEveryMs: a tick looks at
// every session; one whose last snapshot is older than its interval and
// whose active backend is online gets a snapshot of its root, and its
// periodic snapshots beyond the newest keepPeriodic are deleted (their
// chunks collected). Every control-plane replica runs this loop; the
// session's turn is claimed in KV (periodic.<ws>.<uid>, snaplease.go), so
// one replica takes each snapshot.
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

// periodicTurn is the value of periodic.<ws>.<uid>; times are Unix
// milliseconds.
type periodicTurn struct {
	Holder string `json:"holder,omitempty"` // the replica taking it now
	Until  int64  `json:"until,omitempty"`  // its lease's end
	Last   int64  `json:"last"`             // when the last one began
}

func periodicKey(ws, uid string) string { return "periodic." + ws + "." + uid }

// claimTurn claims the session's periodic snapshot for this replica when
// it is due and no replica is taking one; release ends the claim. When it
// is not this replica's turn it returns when the last one began.
func (st *snapStore) claimTurn(ctx context.Context, ws, uid string, every time.Duration) (release func(), last time.Time, err error) {
	me, key := newHolder(), periodicKey(ws, uid)
	var mine bool
	turn, err := casJSON(ctx, st.records, key, func(t *periodicTurn) bool {
		now := time.Now().UnixMilli()
		mine = now-t.Last >= every.Milliseconds() && (t.Holder == "" || t.Until < now)
		if mine {
			t.Holder, t.Until, t.Last = me, now+leaseTTL.Milliseconds(), now
		}
		return mine
	})
	if err != nil || !mine {
		if turn != nil {
			last = time.UnixMilli(turn.Last)
		}
		return nil, last, err
	}
	r := startRenewer(func(ctx context.Context) (bool, error) {
		var held bool
		_, err := casJSON(ctx, st.records, key, func(t *periodicTurn) bool {
			if held = t.Holder == me; held {
				t.Until = time.Now().UnixMilli() + leaseTTL.Milliseconds()
			}
			return held
		})
		return held, err
	})
	return func() {
		r.stopAndWait()
		ctx, cancel := context.WithTimeout(context.Background(), leaseOpTimeout)
		defer cancel()
		_, err := casJSON(ctx, st.records, key, func(t *periodicTurn) bool {
			if t.Holder != me {
				return false
			}
			t.Holder, t.Until = "", 0
			return true
		})
		if err != nil {
			st.log("end a periodic snapshot's claim", ws, err)
		}
	}, time.UnixMilli(turn.Last), nil
}

// periodicSnapshot takes one session's snapshot, when this replica wins
// its turn, and prunes the old ones.
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
	release, last, err := s.snaps.claimTurn(ctx, st.Workspace, st.UID, time.Duration(st.SnapshotEveryMs)*time.Millisecond)
	if err != nil {
		s.log.Warn("periodic snapshot: claim the turn", "ws", st.Workspace, "session", st.ID, "err", err)
		return
	}
	p.mu.Lock()
	p.last[st.UID] = last
	p.mu.Unlock()
	if release == nil {
		return // another replica's turn, or not due yet
	}
	defer release()
	sn, err := s.takeSnapshot(ctx, agentTarget{rpc: s.rpc, ag: ag}, snapshotSpec{
		ws: st.Workspace, agent: ag.ID, session: st.ID, backend: st.Active, kind: snapPeriodic})
	if err != nil {
		s.log.Warn("periodic snapshot failed", "ws", st.Workspace, "session", st.ID, "backend", st.Active, "err", err)
		return
	}
	s.log.Debug("periodic snapshot", "ws", st.Workspace, "session", st.ID, "snapshot", sn.ID, "newBytes", sn.NewBytes)
	// A session deleted during the snapshot takes it along.
	if cur, err := s.sessions.Session(st.Workspace, st.ID).State(ctx); errors.Is(err, wire.ErrNotFound) || (err == nil && cur.UID != st.UID) {
		if err := s.snaps.remove(ctx, st.Workspace, sn.ID); err != nil {
			s.log.Warn("drop the snapshot of a deleted session", "ws", st.Workspace, "snapshot", sn.ID, "err", err)
		}
		return
	}
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
