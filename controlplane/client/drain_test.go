package client_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// A JSON answer whose end comes after its value (here the encoder's
// newline, in a flush of its own, as a proxy that re-chunks may send it)
// still leaves its connection for the next call: the client reads the
// body to its end. Closed early, net/http drops the connection, and every
// call would pay a new one (a TLS handshake on both sides with HTTPS).
func TestCallReusesConnectionWhenTheBodyEndsLate(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
		_, _ = w.Write([]byte("\n"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cl := client.New(srv.URL, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const calls = 10
	for range calls {
		h, err := cl.Health(ctx)
		if err != nil || h.Status != "ok" {
			t.Fatalf("health: %+v, %v", h, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d calls one after another opened %d connections, want 1", calls, n)
	}
}
