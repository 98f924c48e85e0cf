// Package bulkconn provides the TCP connection under a TLS connection that
// carries bulk data (a file, a process's output): its writes can be gathered
// into few large ones and its reads take many records a syscall. crypto/tls
// writes each record (16 KiB at most) with a write of its own and reads one
// record a read: 65,536 syscalls each way for a GiB. Both ends of a bulk
// path use it: the control plane's API listener and the agent's wss://
// connection.
package bulkconn

import (
	"crypto/tls"
	"net"
	"sync"
)

// GatherMax is how many bytes of TLS records a gathering connection holds
// before it writes them out.
const GatherMax = 256 << 10

// Conn is a TCP connection under TLS whose writes can be gathered.
// crypto/tls writes every record (16 KiB at most) with a write of its own,
// a syscall each: 65,536 for a GiB. Between Gather and its done, records go
// into one buffer and out in writes of up to GatherMax. Every write takes
// the lock, so records written meanwhile by any goroutine keep their order.
//
// Its reads go through a large pooled buffer while they come in bulk: after
// a read filled all that TLS asked for (a record's worth), the next takes
// up to readBulk bytes, many records, in one syscall. The buffer is held
// only while it has unread bytes, or during a read that follows a read
// that filled it. Reads are a single goroutine's at a time (crypto/tls
// locks them).
type Conn struct {
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

func (c *Conn) Read(p []byte) (int, error) {
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
func (c *Conn) releaseRead() {
	readBufs.Put(c.rbuf)
	c.rbuf, c.r, c.w, c.rerr = nil, 0, 0, nil
}

var gatherBufs = sync.Pool{New: func() any { b := make([]byte, 0, GatherMax+32<<10); return &b }}

func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.depth == 0 {
		return c.Conn.Write(p)
	}
	if c.err != nil {
		return 0, c.err
	}
	*c.buf = append(*c.buf, p...)
	if len(*c.buf) >= GatherMax {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Gather starts gathering writes; done, called once, ends this gather and
// returns the first write error. Gathers nest: what was gathered goes out
// when the outermost is done.
func (c *Conn) Gather() (done func() error) {
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
func (c *Conn) flushLocked() error {
	if c.err == nil && len(*c.buf) > 0 {
		_, c.err = c.Conn.Write(*c.buf)
	}
	*c.buf = (*c.buf)[:0]
	return c.err
}

// New returns c as a Conn.
func New(c net.Conn) *Conn { return &Conn{Conn: c} }

// Under returns the Conn under a TLS connection, nil when there is none.
func Under(c net.Conn) *Conn {
	switch tc := c.(type) {
	case *tls.Conn:
		b, _ := tc.NetConn().(*Conn)
		return b
	case *TLSConn:
		return tc.raw
	}
	return nil
}
