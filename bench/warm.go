package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// warmPool opens, when the driver's connections are capped (-driver-conns
// N), all N of them before the drives: N requests hold their connections until
// every one has its own. The drives then start with N kept connections and
// open none while their calls in flight stay within N (serve closes no idle
// connection), so no TLS handshake in `serve` is part of what they measure.
func warmPool(ctx context.Context, cl *client.Client, n int) error {
	if n <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got sync.WaitGroup
	got.Add(n)
	all := make(chan struct{})
	go func() { got.Wait(); close(all) }()
	errs := make(chan error, n)
	for range n {
		go func() {
			var once sync.Once
			held := func() {
				once.Do(got.Done)
				select { // keep the connection until all have theirs
				case <-all:
				case <-ctx.Done():
				}
			}
			tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { held() }})
			req, err := http.NewRequestWithContext(tctx, http.MethodGet, cl.BaseURL+"/healthz", nil)
			if err == nil {
				var resp *http.Response
				if resp, err = cl.HTTP.Do(req); err == nil {
					_, err = io.Copy(io.Discard, resp.Body) // read to its end, so the connection is kept
					resp.Body.Close()
				}
			}
			once.Do(got.Done)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			return fmt.Errorf("warm %d driver connections: %w", n, err)
		}
	}
	return nil
}
