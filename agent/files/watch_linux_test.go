package files

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func TestWatchEventsAndNoLeak(t *testing.T) {
	fx := newFixture(t)
	fdsBefore, gBefore := openFDs(t), runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan WatchEvent, 100)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- fx.fs.Watch(ctx, "dir", true, func() { close(ready) }, func(e WatchEvent) { events <- e })
	}()
	<-ready
	next := func(want WatchEvent) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case e := <-events:
				if e == want {
					return
				}
			case <-deadline:
				t.Fatalf("no event %+v", want)
			}
		}
	}
	mustWrite(t, filepath.Join(fx.root, "dir", "new.txt"), "x")
	next(WatchEvent{Path: "dir/new.txt", Op: WatchCreate})
	next(WatchEvent{Path: "dir/new.txt", Op: WatchWrite})
	if err := os.Rename(filepath.Join(fx.root, "dir", "new.txt"), filepath.Join(fx.root, "dir", "sub", "moved.txt")); err != nil {
		t.Fatal(err)
	}
	next(WatchEvent{Path: "dir/new.txt", Op: WatchRename})
	next(WatchEvent{Path: "dir/sub/moved.txt", Op: WatchCreate})
	if err := os.Mkdir(filepath.Join(fx.root, "dir", "fresh"), 0o755); err != nil {
		t.Fatal(err)
	}
	next(WatchEvent{Path: "dir/fresh", Op: WatchCreate})
	mustWrite(t, filepath.Join(fx.root, "dir", "fresh", "deep.txt"), "y") // a new directory is watched too
	next(WatchEvent{Path: "dir/fresh/deep.txt", Op: WatchCreate})
	if err := os.Remove(filepath.Join(fx.root, "dir", "b.txt")); err != nil {
		t.Fatal(err)
	}
	next(WatchEvent{Path: "dir/b.txt", Op: WatchRemove})
	// The agent's own atomic write shows as its target, never its temp file.
	if _, err := fx.fs.Write("dir/atomic.txt", strings.NewReader("z"), WriteOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	next(WatchEvent{Path: "dir/atomic.txt", Op: WatchCreate})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not return after its context ended")
	}
	if n := openFDs(t); n > fdsBefore {
		t.Errorf("%d file descriptors open after the watch, %d before", n, fdsBefore)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > gBefore && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > gBefore {
		t.Errorf("%d goroutines after the watch, %d before", g, gBefore)
	}
}

func TestWatchRefuses(t *testing.T) {
	fx := newFixture(t)
	fx.links(t)
	for p, want := range map[string]string{"../outside": outsideRoot, "tooutside": outsideRoot, "nope": "not_exist", "a.txt": "invalid"} {
		err := fx.fs.Watch(context.Background(), p, false, func() { t.Errorf("%s: ready", p) }, func(WatchEvent) {})
		if kindOf(err) != want {
			t.Errorf("Watch(%s) = %v, want %s", p, err, want)
		}
	}
}
