//go:build linux

package controlplane

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// watchStream runs a watch until the test's stop and hands its events over.
func watchStream(t *testing.T, tgt *client.Target, path string, after uint64) (<-chan client.WatchEvent, context.CancelFunc, <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	evs := make(chan client.WatchEvent, 1000)
	done := make(chan error, 1)
	go func() {
		done <- tgt.Watch(ctx, path, true, after, func(e client.WatchEvent) error {
			evs <- e
			return nil
		})
	}()
	t.Cleanup(cancel)
	return evs, cancel, done
}

// waitEvent reads evs until one for path and op; it fails after a while.
func waitEvent(t *testing.T, evs <-chan client.WatchEvent, path, op string) client.WatchEvent {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case e := <-evs:
			if e.Path == path && e.Op == op {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s event for %s", op, path)
		}
	}
}

func TestWatchStreamResume(t *testing.T) {
	e := newFilesEnv(t)
	dir := filepath.Join(e.root, "w")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	evs, stop, done := watchStream(t, e.tgt, "w", 0)
	// The stream is live once a write shows up; until then, write again.
	probe := filepath.Join(dir, "probe")
	got := make(chan struct{})
	go func() {
		for {
			select {
			case <-got:
				return
			case <-time.After(50 * time.Millisecond):
				os.WriteFile(probe, []byte("p"), 0o644)
			}
		}
	}()
	waitEvent(t, evs, "w/probe", "create")
	close(got)
	writeFile(t, filepath.Join(dir, "sub", "a.txt"), "a", 0o644)
	waitEvent(t, evs, "w/sub/a.txt", "write")
	// One write may be two events (modify, then close) that are read
	// apart: a directory made after it, seen, is the last event before
	// the stop, whatever came of the write.
	if err := os.Mkdir(filepath.Join(dir, "mark"), 0o755); err != nil {
		t.Fatal(err)
	}
	last := waitEvent(t, evs, "w/mark", "create")
	if last.Seq == 0 {
		t.Fatal("event without an id")
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("watch ended with %v", err)
	}
	// While nobody watches: a remove and a create.
	if err := os.Remove(filepath.Join(dir, "sub", "a.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "b.txt"), "b", 0o644)
	evs, stop, _ = watchStream(t, e.tgt, "w", last.Seq)
	first := <-evs
	if first.Reset || first.Path != "w/sub/a.txt" || first.Op != "remove" || first.Seq <= last.Seq {
		t.Fatalf("first event after resume: %+v (resumed after %d)", first, last.Seq)
	}
	waitEvent(t, evs, "w/b.txt", "create")
	stop()
	// An id outside the window: a reset first, then what is retained.
	evs, _, _ = watchStream(t, e.tgt, "w", 5)
	if r := <-evs; !r.Reset {
		t.Fatalf("resume from outside the window: %+v, want a reset", r)
	}
	// Errors are statuses before the stream starts.
	for _, tc := range []struct {
		path string
		code wire.Code
	}{{"../x", wire.CodePermissionDenied}, {"nope", wire.CodeNotFound}} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := e.tgt.Watch(ctx, tc.path, false, 0, func(client.WatchEvent) error { return nil })
		cancel()
		if wire.AsError(err).Code != tc.code {
			t.Errorf("watch %s: %v, want %s", tc.path, err, tc.code)
		}
	}
}
