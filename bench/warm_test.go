package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// TestWarmPoolOpensEveryConnection: warmPool(n) opens n connections, and
// keeps them: n calls in flight at once afterwards open none.
func TestWarmPoolOpensEveryConnection(t *testing.T) {
	const n = 8
	var opened atomic.Int64
	var mu sync.Mutex
	held, all := 0, make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" { // answered once n are in flight
			mu.Lock()
			if held++; held == n {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-time.After(10 * time.Second):
			}
		}
		_, _ = w.Write([]byte("{}\n"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cl := client.New(srv.URL, "")
	cl.HTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if err := warmPool(ctx, cl, 0); err != nil || opened.Load() != 0 {
		t.Fatalf("warmPool(0) = %v with %d connections opened, want nil and none", err, opened.Load())
	}
	if err := warmPool(ctx, cl, n); err != nil {
		t.Fatal(err)
	}
	if got := opened.Load(); got != n {
		t.Fatalf("warmPool(%d) opened %d connections", n, got)
	}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/hold", nil)
			resp, err := cl.HTTP.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
	}
	wg.Wait()
	if got := opened.Load(); got != n {
		t.Errorf("%d calls in flight after warmPool(%d) opened %d connections more", n, n, got-n)
	}
}
