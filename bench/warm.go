package main

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// warmPool opens, when the driver's connections are capped (-driver-conns
// N), all N of them before the drives: N health calls hold their
// connections until every one has its own (the client reads each answer
// to its end, so the connection goes back to the pool). The drives then
// start with N kept connections and open none while their calls in flight
// stay within N (serve closes no idle connection), so no TLS handshake in
// `serve` is part of what they measure.
func warmPool(ctx context.Context, cl *client.Client, n int) error {
	if n <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	all := make(chan struct{}) // closed once every request has its connection, or has failed
	var left atomic.Int64
	left.Store(int64(n))
	errs := make(chan error, n)
	for range n {
		go func() {
			var once sync.Once
			done := func() {
				once.Do(func() {
					if left.Add(-1) == 0 {
						close(all)
					}
				})
			}
			held := func(httptrace.GotConnInfo) {
				done()
				select { // keep the connection until all have theirs
				case <-all:
				case <-ctx.Done():
				}
			}
			_, err := cl.Health(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: held}))
			done()
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
