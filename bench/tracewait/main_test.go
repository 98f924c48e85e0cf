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

	a := newAnalysis()
	if err := each(buf.Bytes(), a.windows); err != nil {
		t.Fatal(err)
	}
	if err := each(buf.Bytes(), a.waits); err != nil {
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
