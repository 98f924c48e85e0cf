//go:build linux

package rawio

import (
	"io"
	"net"
	"os"
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
	return &tcpConn{TCPConn: tc, rc: rc}
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
	rc syscall.RawConn
}

// NetConn is the TCP connection.
func (c *tcpConn) NetConn() net.Conn { return c.TCPConn }

func (c *tcpConn) Read(p []byte) (int, error) {
	if len(p) == 0 || len(p) > Max {
		return c.TCPConn.Read(p)
	}
	n, err := readRaw(c.rc, p)
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
	n, err := writeRaw(c.rc, p)
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

// readRaw reads once into p through rc, waiting on the poller while
// nothing is in.
func readRaw(rc syscall.RawConn, p []byte) (int, error) {
	var n int
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		n, rerr = Read(fd, p)
		return rerr != syscall.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

// writeRaw writes all of p through rc, waiting on the poller while the
// descriptor is full.
func writeRaw(rc syscall.RawConn, p []byte) (int, error) {
	nn := 0
	var werr error
	err := rc.Write(func(fd uintptr) bool {
		for nn < len(p) {
			n, e := Write(fd, p[nn:])
			if e == syscall.EAGAIN {
				return false
			}
			if e != nil {
				werr = e
				return true
			}
			nn += n
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return nn, err
}
