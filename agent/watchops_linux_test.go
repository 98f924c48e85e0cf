package agent

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/wire"
)

func watchReq(t *testing.T, op string, body any) *wire.Request {
	t.Helper()
	r, err := wire.NewRequest(op, body, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWatchEndsAfterItsReaders: a watch shared by two starts, resumed by
// seq, coalescing repeats, and gone (its inotify descriptor and goroutine
// too) once nobody polled it for the grace period.
func TestWatchEndsAfterItsReaders(t *testing.T) {
	dir := t.TempDir()
	root, err := files.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	fds := func() int { es, _ := os.ReadDir("/proc/self/fd"); return len(es) }
	fdsBefore, gBefore := fds(), runtime.NumGoroutine()
	ws := newWatches(root)
	ws.grace = 200 * time.Millisecond
	ctx := context.Background()
	res, err := ws.start(ctx, watchReq(t, wire.OpFsWatchStart, &wire.FsWatchStartRequest{Path: "."}))
	if err != nil {
		t.Fatal(err)
	}
	st := res.(*wire.FsWatchStartResult)
	again, err := ws.start(ctx, watchReq(t, wire.OpFsWatchStart, &wire.FsWatchStartRequest{Path: "/"}))
	if err != nil || again.(*wire.FsWatchStartResult).Handle != st.Handle || ws.len() != 1 {
		t.Fatalf("second start of the same path: %+v, %v; %d watches", again, err, ws.len())
	}
	f, err := os.Create(filepath.Join(dir, "x"))
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		f.Write([]byte("a")) // 100 writes, coalesced while undelivered
	}
	f.Close()
	poll := func(after uint64) *wire.FsWatchPollResult {
		t.Helper()
		r, err := ws.poll(ctx, watchReq(t, wire.OpFsWatchPoll, &wire.FsWatchPollRequest{Handle: st.Handle, After: after, WaitMs: 5000}))
		if err != nil {
			t.Fatal(err)
		}
		return r.(*wire.FsWatchPollResult)
	}
	var evs []wire.FsWatchEvent
	for after := st.Next - 1; len(evs) < 2; {
		r := poll(after)
		evs = append(evs, r.Events...)
		if n := len(r.Events); n > 0 {
			after = r.Events[n-1].Seq
		}
	}
	if evs[0].Op != "create" || evs[1].Op != "write" || evs[1].Seq != evs[0].Seq+1 || len(evs) > 3 {
		t.Fatalf("events: %+v; want create, then the writes coalesced", evs)
	}
	if r := poll(evs[0].Seq); r.Reset || r.Events[0] != evs[1] {
		t.Errorf("resume after the first: %+v", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for (ws.len() > 0 || fds() > fdsBefore || runtime.NumGoroutine() > gBefore) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if ws.len() != 0 || fds() > fdsBefore || runtime.NumGoroutine() > gBefore {
		t.Fatalf("after the grace: %d watches, %d fds (%d before), %d goroutines (%d before)", ws.len(), fds(), fdsBefore, runtime.NumGoroutine(), gBefore)
	}
	if _, err := ws.poll(ctx, watchReq(t, wire.OpFsWatchPoll, &wire.FsWatchPollRequest{Handle: st.Handle})); wire.AsError(err).Code != wire.CodeNotFound {
		t.Errorf("poll of an expired watch: %v", err)
	}
}
