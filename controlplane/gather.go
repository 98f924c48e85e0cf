package controlplane

import (
	"context"
	"net"

	"github.com/outposthq/outpost/internal/bulkconn"
)

// gatherListener accepts gatherConns: the TCP connections under the API's
// TLS.
type gatherListener struct{ net.Listener }

func (l gatherListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return bulkconn.New(c), nil
}

// gatherConn is the connection under an API connection's TLS, whose writes
// a handler writing in bulk gathers.
type gatherConn = bulkconn.Conn

// gatherOf returns the gatherConn under a TLS connection, nil when there
// is none (plain HTTP, or a connection accepted elsewhere).
func gatherOf(c net.Conn) *gatherConn {
	if p, ok := c.(*prefixedConn); ok { // a bulk connection with bytes read ahead
		c = p.Conn
	}
	return bulkconn.Under(c)
}

// gatherKey is the request context's key of its connection's gatherConn.
type gatherKey struct{}

// gatherContext is the http.Server's ConnContext: it notes the
// connection's gatherConn for handlers that write in bulk.
func gatherContext(ctx context.Context, c net.Conn) context.Context {
	if g := gatherOf(c); g != nil {
		return context.WithValue(ctx, gatherKey{}, g)
	}
	return ctx
}

// gatheredWriter writes through w, gathering the TLS records of each write
// on g (see gatherConn). It suits an HTTP/1.1 response, which only its
// handler writes.
type gatheredWriter struct {
	w interface{ Write([]byte) (int, error) }
	g *gatherConn
}

func (gw gatheredWriter) Write(p []byte) (int, error) {
	done := gw.g.Gather()
	n, err := gw.w.Write(p)
	if ferr := done(); err == nil && ferr != nil {
		return n, ferr
	}
	return n, err
}
