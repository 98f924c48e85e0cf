package main

import (
	"bytes"
	"runtime"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdLock makes a goroutine wait about d on mu, which this function holds.
func holdLock(mu *sync.Mutex, d time.Duration) {
	mu.Lock()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		waitOnLock(mu)
	}()
	time.Sleep(d)
	mu.Unlock()
	wg.Wait()
}

func waitOnLock(mu *sync.Mutex) {
	mu.Lock()
	defer mu.Unlock()
}

// TestTraceWaits traces this process while a goroutine waits on a lock
// and a collection runs, and checks what the analysis says: the mark phase
// found, the lock wait with the function that waited and about its length,
// and who woke it.
func TestTraceWaits(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	holdLock(&mu, 30*time.Millisecond)
	runtime.GC()
	trace.Stop()

	a, err := analyze(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(a.marks) == 0 {
		t.Fatal("no GC mark phase found in a trace with runtime.GC in it")
	}
	var found bool
	for _, m := range []byKey{a.locksIn, a.locksOut} {
		for k, w := range m {
			if !strings.Contains(k, "waitOnLock") {
				continue
			}
			found = true
			if d := w.pct(1); d < 20*time.Millisecond || d > 5*time.Second {
				t.Errorf("the wait on the lock lasted %v, want about 30 ms", d)
			}
			if !strings.HasPrefix(k, "sync |") || !strings.Contains(k, "sync.(*Mutex).Lock") {
				t.Errorf("the wait is reported as %q, want a mutex wait", k)
			}
		}
	}
	if !found {
		var keys []string
		for k := range a.locksOut {
			keys = append(keys, k)
		}
		t.Fatalf("the wait in waitOnLock is not among the mutex waits: %q", keys)
	}
	var out bytes.Buffer
	a.report(&out, true)
	for _, want := range []string{"GC mark phase", "waitOnLock", "Ps held"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report has no %q:\n%s", want, out.String())
		}
	}
}

// node is one element of the pointer-rich heap TestTraceAssists marks.
type node struct {
	next *node
	pad  [6]*int
}

// keep holds the heap TestTraceAssists makes the GC mark.
var keep *node

// allocateWhileMarking allocates small objects until done is closed: a
// goroutine doing so in a mark phase has to assist.
func allocateWhileMarking(done <-chan struct{}, sink *[]*int) {
	for {
		select {
		case <-done:
			return
		default:
		}
		for range 64 {
			*sink = append((*sink)[:0], new(int))
		}
	}
}

// TestTraceAssists traces this process while goroutines allocate during
// a collection of a pointer-rich heap, and checks that the analysis counts
// their assists, by the function they started in and by where the
// allocation that made them assist was.
func TestTraceAssists(t *testing.T) {
	for i := 0; i < 1<<20; i++ {
		keep = &node{next: keep}
	}
	defer func() { keep = nil }()
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() { // not wg.Go: the goroutine's root is then this test's closure
			defer wg.Done()
			var sink []*int
			allocateWhileMarking(done, &sink)
		}()
	}
	runtime.GC()
	runtime.GC()
	close(done)
	wg.Wait()
	trace.Stop()

	a, err := analyze(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var byRoot, bySite int
	for k, w := range a.assistsByRoot {
		if strings.Contains(k, "TestTraceAssists") {
			byRoot += w.n
		}
	}
	for k, w := range a.assistsBySite {
		if strings.Contains(k, "allocateWhileMarking") {
			bySite += w.n
		}
	}
	if byRoot == 0 || bySite == 0 || len(a.assisted) == 0 {
		t.Fatalf("assists: %d by the test's goroutines, %d begun in allocateWhileMarking, %d goroutines; want some of each", byRoot, bySite, len(a.assisted))
	}
	var out bytes.Buffer
	a.report(&out, false)
	for _, want := range []string{"== mark assists:", "allocateWhileMarking"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report has no %q:\n%s", want, out.String())
		}
	}
}
