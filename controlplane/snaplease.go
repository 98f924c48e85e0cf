package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/wire"
)

// Leases in KV outpost_snapshots, so that every control-plane replica
// sees them (a mutex would serialize one replica only):
//
//   - lock.<ws>: the workspace's chunk users and its collector. A snapshot
//     being taken or restored is a user from before it looks at the store
//     until it is done; the collection of unused chunks runs only while
//     there is no user, and users wait while it runs. A collection asked
//     for while there are users is left pending, and the last user to go
//     runs it. So no chunk a snapshot counts on is freed under it.
//   - periodic.<ws>.<session uid>: whose turn a session's periodic
//     snapshot is, and when the last one began, so that one replica takes
//     each.
//
// Every change is a compare and swap on the key's revision. A holder
// renews its lease every leaseTTL/3; one not renewed for leaseTTL (a
// replica that died) counts as gone.
const (
	leaseTTL = 30 * time.Second
	// leasePoll is the longest wait between looks at a held lock.
	leasePoll = 250 * time.Millisecond
	// leaseOpTimeout bounds a release and a renewal, which may run after
	// their caller's context ended.
	leaseOpTimeout = 10 * time.Second
	// collectTimeout bounds a collection the last user runs.
	collectTimeout = 5 * time.Minute
)

// chunkLock is the value of lock.<ws>; times are Unix milliseconds.
type chunkLock struct {
	Users   map[string]int64 `json:"users,omitempty"` // holder → lease end
	GC      string           `json:"gc,omitempty"`
	GCUntil int64            `json:"gcUntil,omitempty"`
	Pending bool             `json:"pending,omitempty"` // a collection is owed
}

// live drops users whose lease ended and says whether any is left, and
// whether a collection (other than by me) is running.
func (l *chunkLock) live(now int64, me string) (users, gc bool) {
	for h, until := range l.Users {
		if until < now {
			delete(l.Users, h)
		}
	}
	if l.GC != "" && l.GCUntil < now {
		l.GC, l.GCUntil = "", 0
	}
	return len(l.Users) > 0, l.GC != "" && l.GC != me
}

func lockKey(ws string) string { return "lock." + ws }

// newHolder names one lease holder uniquely across replicas.
func newHolder() string { return rand.Text()[:16] }

// casJSON changes key's JSON value with f by compare and swap until it
// holds or ctx ends; f returns false to leave the value as it is. The
// value f saw last is returned.
func casJSON[T any](ctx context.Context, kv jetstream.KeyValue, key string, f func(*T) bool) (*T, error) {
	for {
		var v T
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return nil, stateErr("read "+key, err)
		default:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &v); err != nil {
				return nil, wire.Errorf(wire.CodeInternal, "", "%s: %v", key, err)
			}
		}
		if !f(&v) {
			return &v, nil
		}
		b, _ := json.Marshal(&v)
		if rev == 0 {
			_, err = kv.Create(ctx, key, b)
		} else {
			_, err = kv.Update(ctx, key, b, rev)
		}
		if err == nil {
			return &v, nil
		}
		if !isRevisionMismatch(err) && !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, stateErr("store "+key, err)
		}
		// Another replica changed it, or a stale read: look again.
		select {
		case <-ctx.Done():
			return nil, stateErr("store "+key, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// renewer renews a lease every leaseTTL/3 until stopped, and says whether
// it still holds.
type renewer struct {
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	lastOK time.Time
	lost   bool
}

// startRenewer runs renew (true: still held) in a goroutine it owns until
// stopAndWait.
func startRenewer(renew func(context.Context) (bool, error)) *renewer {
	r := &renewer{stop: make(chan struct{}), done: make(chan struct{}), lastOK: time.Now()}
	go func() {
		defer close(r.done)
		t := time.NewTicker(leaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
			began := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), leaseOpTimeout)
			held, err := renew(ctx)
			cancel()
			r.mu.Lock()
			switch {
			case err == nil && held:
				r.lastOK = began
			case err == nil:
				r.lost = true
			}
			r.mu.Unlock()
		}
	}()
	return r
}

// held is nil while the lease is certainly held: renewed within leaseTTL
// (less a margin for clocks and the renewal's own time).
func (r *renewer) held() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lost || time.Since(r.lastOK) > leaseTTL*2/3 {
		return wire.Errorf(wire.CodeUnavailable, wire.ReasonStateUnavailable, "lost the snapshot store's lease (the state store was unreachable too long); take it again")
	}
	return nil
}

func (r *renewer) stopAndWait() {
	close(r.stop)
	<-r.done
}

// chunkUse is a user's hold on a workspace's chunks; release it.
type chunkUse struct {
	st     *snapStore
	ws, me string
	r      *renewer
}

// use waits for a collection running in the workspace to end and holds
// its chunks until release: none is freed meanwhile.
func (st *snapStore) use(ctx context.Context, ws string) (*chunkUse, error) {
	me := newHolder()
	wait := 10 * time.Millisecond
	for {
		var busy bool
		_, err := casJSON(ctx, st.records, lockKey(ws), func(l *chunkLock) bool {
			now := time.Now().UnixMilli()
			if _, busy = l.live(now, me); busy {
				return false
			}
			if l.Users == nil {
				l.Users = map[string]int64{}
			}
			l.Users[me] = now + leaseTTL.Milliseconds()
			return true
		})
		if err != nil {
			return nil, err
		}
		if !busy {
			break
		}
		select {
		case <-ctx.Done():
			return nil, stateErr("wait for the snapshot store's collection", ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, leasePoll)
	}
	u := &chunkUse{st: st, ws: ws, me: me}
	u.r = startRenewer(func(ctx context.Context) (bool, error) {
		var held bool
		_, err := casJSON(ctx, st.records, lockKey(ws), func(l *chunkLock) bool {
			_, held = l.Users[me]
			if held {
				l.Users[me] = time.Now().UnixMilli() + leaseTTL.Milliseconds()
			}
			return held
		})
		return held, err
	})
	return u, nil
}

// held is nil while the use still holds the chunks.
func (u *chunkUse) held() error { return u.r.held() }

// release lets the chunks go and, when it was the last user and a
// collection is owed, runs it. It uses a context of its own: it runs
// when its caller is done, perhaps cancelled.
func (u *chunkUse) release() {
	u.r.stopAndWait()
	ctx, cancel := context.WithTimeout(context.Background(), leaseOpTimeout)
	defer cancel()
	var owed bool
	_, err := casJSON(ctx, u.st.records, lockKey(u.ws), func(l *chunkLock) bool {
		delete(l.Users, u.me)
		users, gc := l.live(time.Now().UnixMilli(), "")
		owed = l.Pending && !users && !gc
		return true
	})
	if err != nil {
		u.st.log("release the snapshot store's lock", u.ws, err)
		return
	}
	if owed {
		ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
		defer cancel()
		if err := u.st.collectWhenFree(ctx, u.ws); err != nil {
			u.st.log("collect unused chunks", u.ws, err)
		}
	}
}

// collectWhenFree collects the workspace's unused chunks now if nothing
// uses them, else leaves the collection to the last user to go.
func (st *snapStore) collectWhenFree(ctx context.Context, ws string) error {
	me := newHolder()
	for {
		var run bool
		_, err := casJSON(ctx, st.records, lockKey(ws), func(l *chunkLock) bool {
			now := time.Now().UnixMilli()
			users, gc := l.live(now, me)
			if users || gc {
				run = false
				changed := !l.Pending
				l.Pending = true
				return changed
			}
			run = true
			l.GC, l.GCUntil, l.Pending = me, now+leaseTTL.Milliseconds(), false
			return true
		})
		if err != nil || !run {
			return err
		}
		r := startRenewer(func(ctx context.Context) (bool, error) {
			var held bool
			_, err := casJSON(ctx, st.records, lockKey(ws), func(l *chunkLock) bool {
				held = l.GC == me
				if held {
					l.GCUntil = time.Now().UnixMilli() + leaseTTL.Milliseconds()
				}
				return held
			})
			return held, err
		})
		cerr := st.collect(ctx, ws, r.held)
		r.stopAndWait()
		var again bool
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseOpTimeout)
		_, err = casJSON(rctx, st.records, lockKey(ws), func(l *chunkLock) bool {
			if l.GC != me {
				return false
			}
			again = l.Pending
			l.GC, l.GCUntil, l.Pending = "", 0, false
			return true
		})
		cancel()
		if cerr != nil {
			return cerr
		}
		if err != nil || !again {
			return err
		}
		// A snapshot was deleted while this collection ran: it may have
		// missed its chunks.
	}
}

// log reports a lock failure that has no caller to return to.
func (st *snapStore) log(what, ws string, err error) {
	if st.logf != nil {
		st.logf(fmt.Sprintf("snapshot store: %s", what), "ws", ws, "err", err)
	}
}
