package agent

import (
	"context"
	"crypto/rand"
	"strconv"
	"sync"
	"time"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/wire"
)

// Watch retention: a watch keeps its last watchRing events (the resume
// window of Last-Event-ID) and lives watchGrace after its last poll, so a
// client that reconnects within it resumes where it was; then its
// inotify instance and goroutine end.
const (
	watchRing  = 4096
	watchGrace = 30 * time.Second
)

// watch is one directory watched for every client of it.
type watch struct {
	key, handle string
	path        string // clean, as watched
	cancel      context.CancelFunc
	done        chan struct{}
	timer       *time.Timer

	mu        sync.Mutex
	ring      []wire.FsWatchEvent // oldest first, at most watchRing
	next      uint64              // seq of the next event
	delivered uint64              // highest seq a poll returned
	changed   chan struct{}       // closed and replaced when an event lands
	err       error               // why the watch ended, once done
}

// emit appends e: a repeat of the last undelivered event (same path and
// op) is coalesced into it; past watchRing the oldest is dropped.
func (w *watch) emit(e files.WatchEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	op := e.Op
	if e.Overflow {
		op = "overflow"
	}
	if n := len(w.ring); n > 0 {
		last := w.ring[n-1]
		if last.Seq > w.delivered && last.Path == e.Path && last.Op == op {
			return
		}
	}
	if len(w.ring) == watchRing {
		w.ring = append(w.ring[:0], w.ring[1:]...)
	}
	w.ring = append(w.ring, wire.FsWatchEvent{Seq: w.next, Path: e.Path, Op: op})
	w.next++
	close(w.changed)
	w.changed = make(chan struct{})
}

// after returns the events after seq (reset when seq is outside the
// window), or the channel that says when there may be some.
func (w *watch) after(seq uint64) (*wire.FsWatchPollResult, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	res := &wire.FsWatchPollResult{}
	first := w.next - uint64(len(w.ring))
	if seq+1 < first || seq >= w.next {
		res.Reset, seq = true, first-1
	}
	i := int(seq + 1 - first)
	evs := w.ring[i:min(len(w.ring), i+wire.MaxWatchEvents)]
	if len(evs) > 0 {
		res.Events = append([]wire.FsWatchEvent(nil), evs...)
		w.delivered = max(w.delivered, evs[len(evs)-1].Seq)
	}
	return res, w.changed
}

// watches are the agent's watches, by key (path and recursion) and handle.
type watches struct {
	fs    *files.FS
	grace time.Duration

	mu       sync.Mutex
	closed   bool
	byKey    map[string]*watch
	byHandle map[string]*watch
	gone     gone // why watches were ended by the owner's switches
}

func newWatches(root *files.FS) *watches {
	return &watches{fs: root, grace: watchGrace, byKey: map[string]*watch{}, byHandle: map[string]*watch{}}
}

// registerWatch serves the watch ops and says whether this platform can.
func registerWatch(a *Agent, ws *watches) {
	a.cfg.Capabilities["fsWatch"] = files.WatchSupported
	a.Register(wire.OpFsWatchStart, ws.start)
	a.Register(wire.OpFsWatchPoll, ws.poll)
}

// start returns the watch of path (made when there is none).
func (ws *watches) start(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsWatchStartRequest](req)
	if err != nil {
		return nil, err
	}
	c, err := files.Clean(body.Path)
	if err != nil {
		return nil, err
	}
	key := strconv.FormatBool(body.Recursive) + ":" + c
	ws.mu.Lock()
	if w, ok := ws.byKey[key]; ok {
		w.timer.Reset(ws.grace)
		ws.mu.Unlock()
		w.mu.Lock()
		defer w.mu.Unlock()
		return &wire.FsWatchStartResult{Handle: w.handle, Next: w.next}, nil
	}
	ws.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	// Seqs start at the clock's milliseconds × 1000, so a client's
	// Last-Event-ID from an earlier watch of the path is outside the new
	// one's window (a reset), never mistaken for one of its events.
	w := &watch{key: key, handle: "w" + rand.Text(), path: c, cancel: cancel, done: make(chan struct{}),
		next: uint64(time.Now().UnixMilli()) * 1000, changed: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(w.done)
		w.err = ws.fs.Watch(ctx, c, body.Recursive, func() { close(ready) }, w.emit)
	}()
	select {
	case <-ready:
	case <-w.done:
		cancel()
		return nil, w.err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		cancel()
		<-w.done
		return nil, wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentOffline, "agent is stopping")
	}
	if old, ok := ws.byKey[key]; ok { // another start won the race
		cancel()
		<-w.done
		return &wire.FsWatchStartResult{Handle: old.handle, Next: old.next}, nil
	}
	ws.byKey[key], ws.byHandle[w.handle] = w, w
	w.timer = time.AfterFunc(ws.grace, func() { ws.expire(w) })
	return &wire.FsWatchStartResult{Handle: w.handle, Next: w.next}, nil
}

// poll returns the events after body.After, waiting up to WaitMs for one.
func (ws *watches) poll(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsWatchPollRequest](req)
	if err != nil {
		return nil, err
	}
	wait := time.Duration(body.WaitMs) * time.Millisecond
	ws.mu.Lock()
	w, ok := ws.byHandle[body.Handle]
	if ok {
		w.timer.Reset(ws.grace + wait)
	}
	ws.mu.Unlock()
	if !ok {
		if err := ws.gone.why(body.Handle); err != nil {
			return nil, err
		}
		return nil, wire.Errorf(wire.CodeNotFound, "", "no watch %q (idle for over %s)", body.Handle, ws.grace)
	}
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		res, changed := w.after(body.After)
		if len(res.Events) > 0 || res.Reset {
			return res, nil
		}
		select {
		case <-changed:
		case <-timeout.C:
			return res, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-w.done:
			if err := ws.gone.why(body.Handle); err != nil {
				return nil, err
			}
			if w.err != nil {
				return nil, w.err
			}
			return nil, wire.Errorf(wire.CodeNotFound, "", "the watch ended (its directory was removed?)")
		}
	}
}

// expire ends w when it is still registered.
func (ws *watches) expire(w *watch) {
	ws.mu.Lock()
	if ws.byHandle[w.handle] != w {
		ws.mu.Unlock()
		return
	}
	delete(ws.byHandle, w.handle)
	delete(ws.byKey, w.key)
	ws.mu.Unlock()
	w.cancel()
	<-w.done
}

// endWhere ends the watches v refuses, remembering why, and returns how
// many; a poll waiting on one answers v's error.
func (ws *watches) endWhere(v verdict) int {
	ws.mu.Lock()
	var cut []*watch
	for h, w := range ws.byHandle {
		if err := v(handleTag(wire.OpFsWatchStart, w.path)); err != nil {
			delete(ws.byHandle, h)
			delete(ws.byKey, w.key)
			ws.gone.note(h, err)
			cut = append(cut, w)
		}
	}
	ws.mu.Unlock()
	for _, w := range cut {
		w.timer.Stop()
		w.cancel()
		<-w.done
	}
	return len(cut)
}

// len is the number of live watches.
func (ws *watches) len() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.byHandle)
}

// close ends every watch; later starts fail.
func (ws *watches) close() {
	ws.mu.Lock()
	ws.closed = true
	all := ws.byHandle
	ws.byHandle, ws.byKey = map[string]*watch{}, map[string]*watch{}
	ws.mu.Unlock()
	for _, w := range all {
		w.timer.Stop()
		w.cancel()
		<-w.done
	}
}
