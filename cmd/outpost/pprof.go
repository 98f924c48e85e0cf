//go:build !agent

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"
)

// servePprof serves Go's profiles (net/http/pprof, under /debug/pprof/) on
// addr until ctx ends, for an operator who must find what a live control
// plane spends its time on, and the runtime's and the control plane's
// figures as JSON on /debug/metrics (stats adds the latter; nil leaves
// them out). Nothing there is authenticated: addr should be a loopback
// address.
func servePprof(ctx context.Context, addr string, stats func() any, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("pprof listen: %w", err)
	}
	// Sample contended locks and long blocking waits, so the mutex and
	// block profiles have something to say; both cost little at these
	// rates (one contention event in 100, one sample per ms blocked).
	runtime.SetMutexProfileFraction(100)
	runtime.SetBlockProfileRate(int(time.Millisecond))
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/metrics", metricsHandler(stats))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	fmt.Fprintf(stderr, "pprof: http://%s/debug/pprof/\n", ln.Addr())
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(stderr, "pprof:", err)
		}
	}()
	return nil
}
