package client_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http/httptrace"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane"
	"github.com/outposthq/outpost/controlplane/client"
)

// Calls made at once by several goroutines reuse the connections of the
// calls before them, with the client a program gets by default (no HTTP
// of its own) and with TrustingCA's over HTTPS. Through net/http's
// default client every call beyond its two idle connections opened a
// connection (over HTTPS, a TLS handshake on both sides) and closed it
// after.
func TestConcurrentCallsReuseConnections(t *testing.T) {
	for _, tc := range []struct {
		name  string
		https bool
	}{
		{"http, default client", false},
		{"https, TrustingCA", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// What a failure below is made of: the dials the transport
			// started, and the calls given a connection no call had
			// used before. More dials than that are dials that lost
			// the race to a connection another call put back.
			var dials, fresh atomic.Int64
			ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
				ConnectStart: func(string, string) { dials.Add(1) },
				GotConn: func(i httptrace.GotConnInfo) {
					if !i.Reused {
						fresh.Add(1)
					}
				},
			})
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			cfg := controlplane.Config{
				Listen: "127.0.0.1:0", NATSListen: "127.0.0.1:0", StateDir: dir,
				Logger: slog.New(slog.DiscardHandler),
			}
			if tc.https {
				cfg.TLSSelfSigned = []string{"127.0.0.1"}
			}
			srv, err := controlplane.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			u, err := url.Parse(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			p := countConns(t, u.Host)
			u.Host = p.addr
			cl := client.New(u.String(), srv.AdminToken())
			if tc.https {
				if cl.HTTP, err = client.TrustingCA(srv.CAFile()); err != nil {
					t.Fatal(err)
				}
			}
			const callers = 16
			round := func(calls int) {
				t.Helper()
				var wg sync.WaitGroup
				errs := make(chan error, callers)
				for range callers {
					wg.Go(func() {
						for range calls {
							if _, err := cl.Health(ctx); err != nil {
								errs <- err
								return
							}
							// Calls spaced as a program's would be.
							time.Sleep(time.Millisecond)
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
			}
			// The first calls open the connections (more than callers:
			// a call that dials may be given a connection another call
			// returned meanwhile). Later calls at the same concurrency
			// need next to none: a few dials of that race, at most one
			// per caller. (net/http's default client: 170 to 260.)
			round(5)
			warm, warmDials, warmFresh := p.accepted.Load(), dials.Load(), fresh.Load()
			round(25)
			if n := p.accepted.Load() - warm; n > callers {
				t.Fatalf("%d more calls by %d goroutines at once opened %d more connections (%d for the first %d calls), want at most %d; the transport started %d dials, and %d calls got a new connection",
					callers*25, callers, n, warm, callers*5, callers, dials.Load()-warmDials, fresh.Load()-warmFresh)
			}
		})
	}
}

// connCounter is a TCP forwarder in front of an address that counts the
// connections made through it.
type connCounter struct {
	addr     string
	accepted atomic.Int64
}

// countConns forwards connections on a new loopback port to target until
// the test ends.
func countConns(t *testing.T, target string) *connCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &connCounter{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c, up)
			mu.Unlock()
			pipe := func(dst, src net.Conn) {
				io.Copy(dst, src)
				dst.Close()
				src.Close()
			}
			wg.Go(func() { pipe(up, c) })
			wg.Go(func() { pipe(c, up) })
		}
	})
	return p
}
