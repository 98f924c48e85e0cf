//go:build linux

package rawio

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"

	"github.com/outposthq/outpost/internal/bulkconn"
)

// Conn is c with its small reads and writes made by direct system calls
// (on Go's poller still: a read waits there when nothing is in, with the
// connection's deadlines), when c is a *net.TCPConn; c itself otherwise.
// Large ones, and everything else (CloseWrite, deadlines, buffer sizes),
// are the TCP connection's own.
func Conn(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &tcpConn{TCPConn: tc, ops: newOps(rc)}
}

// Wrap makes the small reads and writes of a stream's connection c
// direct, as Conn does, and returns it: c wrapped when it is a
// *net.TCPConn; when it is TLS over a bulkconn.Conn over TCP, the TCP
// connection under it is wrapped in place, which only its owner may do
// before anyone else reads or writes c. (Only where the connection is
// the stream's alone: file transfers' sendfile and splice want the
// *net.TCPConn itself.)
func Wrap(c net.Conn) net.Conn {
	if g := bulkconn.Under(c); g != nil {
		g.Conn = Conn(g.Conn)
		return c
	}
	return Conn(c)
}

type tcpConn struct {
	*net.TCPConn
	ops *ops
}

// NetConn is the TCP connection.
func (c *tcpConn) NetConn() net.Conn { return c.TCPConn }

func (c *tcpConn) Read(p []byte) (int, error) {
	if len(p) == 0 || len(p) > Max {
		return c.TCPConn.Read(p)
	}
	n, err := c.ops.read(p)
	if err != nil {
		return 0, c.opError("read", err)
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (c *tcpConn) Write(p []byte) (int, error) {
	if len(p) > Max {
		return c.TCPConn.Write(p)
	}
	n, err := c.ops.write(p)
	if err != nil {
		return n, c.opError("write", err)
	}
	return n, nil
}

func (c *tcpConn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok { // the RawConn's own ("raw-read"): its cause
		err = oe.Err
	}
	if _, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError(op, err)
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// ops are a descriptor's direct reads and writes through its RawConn,
// each direction's callback made once: a closure a call, capturing the
// buffer and the results, would be an allocation on every keystroke's
// read and write (rc.Read and rc.Write take the callback through an
// interface, so it escapes).
type ops struct {
	rc syscall.RawConn
	rd rawOp
	wr rawOp
}

// rawOp is one direction's call in progress: its buffer and results, and
// the callback given to the RawConn, bound once.
type rawOp struct {
	mu  sync.Mutex // one call at a time (a Conn may be read by two goroutines)
	p   []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

func newOps(rc syscall.RawConn) *ops {
	o := &ops{rc: rc}
	o.rd.fn = o.readFD
	o.wr.fn = o.writeFD
	return o
}

// readFD is the read's callback: one read, done unless the descriptor is
// empty.
func (o *ops) readFD(fd uintptr) bool {
	o.rd.n, o.rd.err = Read(fd, o.rd.p)
	return o.rd.err != syscall.EAGAIN
}

// writeFD is the write's callback: writes until all of p is out (done),
// the descriptor is full (wait) or a write fails (done).
func (o *ops) writeFD(fd uintptr) bool {
	w := &o.wr
	for w.n < len(w.p) {
		n, e := Write(fd, w.p[w.n:])
		if e == syscall.EAGAIN {
			return false
		}
		if e != nil {
			w.err = e
			return true
		}
		w.n += n
	}
	return true
}

// read reads once into p, waiting on the poller while nothing is in.
func (o *ops) read(p []byte) (int, error) {
	r := &o.rd
	r.mu.Lock()
	r.p, r.n, r.err = p, 0, nil
	err := o.rc.Read(r.fn)
	n, rerr := r.n, r.err
	r.p, r.err = nil, nil // the caller's buffer is not held
	r.mu.Unlock()
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

// write writes all of p, waiting on the poller while the descriptor is
// full.
func (o *ops) write(p []byte) (int, error) {
	w := &o.wr
	w.mu.Lock()
	w.p, w.n, w.err = p, 0, nil
	err := o.rc.Write(w.fn)
	nn, werr := w.n, w.err
	w.p, w.err = nil, nil
	w.mu.Unlock()
	if err == nil {
		err = werr
	}
	return nn, err
}
