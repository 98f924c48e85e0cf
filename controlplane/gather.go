package controlplane

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
)

// gatherMax is how many bytes of TLS records a gathering connection holds
// before it writes them out.
const gatherMax = 256 << 10

// gatherListener accepts gatherConns: the TCP connections under the API's
// TLS.
type gatherListener struct{ net.Listener }

func (l gatherListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &gatherConn{Conn: c}, nil
}

// gatherConn is a TCP connection under TLS whose writes can be gathered.
// crypto/tls writes every record (16 KiB at most) with a write of its own,
// a syscall each: 65,536 for a GiB. Between gather and its done, records go
// into one buffer and out in writes of up to gatherMax. Every write takes
// the lock, so records written meanwhile by any goroutine keep their order.
//
// Its reads go through a large pooled buffer while they come in bulk: after
// a read filled all that TLS asked for (a record's worth), the next takes
// up to readBulk bytes, many records, in one syscall. The buffer is held
// only while it has unread bytes, or during a read that follows a read
// that filled it. Reads are a single goroutine's at a time (crypto/tls
// locks them).
type gatherConn struct {
	net.Conn

	bulk bool    // the last read filled its buffer: read the next into rbuf
	rbuf *[]byte // pooled, while it holds unread bytes
	r, w int     // unread bytes are rbuf[r:w]
	rerr error   // the error of rbuf's read, returned once its bytes are

	mu    sync.Mutex
	depth int // gathers not yet done; gathering while > 0
	buf   *[]byte
	err   error // the first failed write of gathered records
}

// readBulk is the read buffer's size while reads come in bulk.
const readBulk = 256 << 10

var readBufs = sync.Pool{New: func() any { b := make([]byte, readBulk); return &b }}

func (c *gatherConn) Read(p []byte) (int, error) {
	if c.rbuf == nil && !c.bulk {
		n, err := c.Conn.Read(p)
		c.bulk = err == nil && n >= readBulkMin && n == len(p)
		return n, err
	}
	if c.rbuf == nil {
		c.rbuf = readBufs.Get().(*[]byte)
		n, err := c.Conn.Read(*c.rbuf)
		c.r, c.w, c.rerr = 0, n, err
		c.bulk = err == nil && n == len(*c.rbuf)
		if n == 0 {
			c.releaseRead()
			return 0, err
		}
	}
	n := copy(p, (*c.rbuf)[c.r:c.w])
	c.r += n
	if c.r == c.w {
		err := c.rerr
		c.releaseRead()
		return n, err
	}
	return n, nil
}

// readBulkMin is the least a read must fill to count as bulk.
const readBulkMin = 4 << 10

// releaseRead gives the read buffer back.
func (c *gatherConn) releaseRead() {
	readBufs.Put(c.rbuf)
	c.rbuf, c.r, c.w, c.rerr = nil, 0, 0, nil
}

var gatherBufs = sync.Pool{New: func() any { b := make([]byte, 0, gatherMax+32<<10); return &b }}

func (c *gatherConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.depth == 0 {
		return c.Conn.Write(p)
	}
	if c.err != nil {
		return 0, c.err
	}
	*c.buf = append(*c.buf, p...)
	if len(*c.buf) >= gatherMax {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// gather starts gathering writes; done, called once, ends this gather and
// returns the first write error. Gathers nest: what was gathered goes out
// when the outermost is done.
func (c *gatherConn) gather() (done func() error) {
	c.mu.Lock()
	if c.depth == 0 {
		c.buf = gatherBufs.Get().(*[]byte)
	}
	c.depth++
	c.mu.Unlock()
	return func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.depth--
		if c.depth > 0 {
			return c.err
		}
		err := c.flushLocked()
		gatherBufs.Put(c.buf)
		c.buf = nil
		return err
	}
}

// flushLocked writes the gathered bytes.
func (c *gatherConn) flushLocked() error {
	if c.err == nil && len(*c.buf) > 0 {
		_, c.err = c.Conn.Write(*c.buf)
	}
	*c.buf = (*c.buf)[:0]
	return c.err
}

// gatherOf returns the gatherConn under a TLS connection, nil when there
// is none (plain HTTP, or a connection accepted elsewhere).
func gatherOf(c net.Conn) *gatherConn {
	if tc, ok := c.(*tls.Conn); ok {
		g, _ := tc.NetConn().(*gatherConn)
		return g
	}
	return nil
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
	done := gw.g.gather()
	n, err := gw.w.Write(p)
	if ferr := done(); err == nil && ferr != nil {
		return n, ferr
	}
	return n, err
}
