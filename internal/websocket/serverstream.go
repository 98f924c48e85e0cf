package websocket

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// ServerStream is the server side of a byte stream carried in a
// WebSocket's binary frames, as a net.Conn that needs no goroutine of its
// own: Read returns the payloads of the data frames the client sends (as
// one stream, unmasked), answering pings and the client's close on the
// way; each Write goes out as one binary frame (or a few, past 256 KiB).
// The embedded NATS server's own read and write loops read and write it, so
// an agent's connection costs the control plane their two goroutines and
// not two more to copy between them and a pipe.
//
// One goroutine may read while others write; Close may be called from
// any goroutine, any number of times.
type ServerStream struct {
	ws     *Conn
	gather func() (done func() error)
	left   int64 // payload of the current data frame still to read
	key    [4]byte
	masked bool
	pos    int // mask position in the current frame

	closeOnce sync.Once
}

// NewServerStream is the stream over ws, a server side connection from
// AcceptStream; opt.Gather, when set, is called around the write of each
// frame that carries more than 4 KiB.
// Nothing else may read ws afterwards.
func NewServerStream(ws *Conn, opt StreamOptions) (*ServerStream, error) {
	if ws.client {
		return nil, errors.New("websocket: ServerStream runs on the server side")
	}
	return &ServerStream{ws: ws, gather: opt.Gather}, nil
}

// Read returns payload bytes of the client's data frames. It returns
// io.EOF after the client's close (answered), and an error, with the
// connection closed, for a frame that breaks the protocol (1002) or a text
// frame (1007: a byte stream travels in binary frames). A read that
// outlives the read deadline returns the timeout and leaves the stream
// whole, to read on after a new deadline.
func (s *ServerStream) Read(p []byte) (int, error) {
	ws := s.ws
	for s.left == 0 {
		if err := s.peekFrameStart(); isTimeout(err) {
			return 0, err // nothing consumed: the stream reads on after a new deadline
		}
		h, err := readHeader(ws.br)
		if err == io.EOF || errors.Is(err, net.ErrClosed) {
			ws.shutdown()
			return 0, io.EOF
		}
		if err != nil {
			return 0, ws.fail(err)
		}
		if !h.masked && !ws.unmaskedOK {
			return 0, ws.fail(fmt.Errorf("%w: masking is the client's and only the client's", ErrProtocol))
		}
		if h.op.isControl() {
			done, err := relayControl(ws, h)
			if err != nil {
				return 0, err
			}
			if done {
				return 0, io.EOF
			}
			continue
		}
		if h.op == OpText {
			_ = ws.closeWith(CloseInvalidData, "binary frames only")
			ws.shutdown()
			return 0, fmt.Errorf("websocket: a text frame in a byte stream")
		}
		s.left, s.key, s.masked, s.pos = h.length, h.key, h.masked, 0
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := ws.br.Read(p[:min(int64(len(p)), s.left)])
	if n == 0 && isTimeout(err) {
		return 0, err // the stream reads on after a new deadline
	}
	if s.masked {
		s.pos = maskBytes(s.key, s.pos, p[:n])
	}
	s.left -= int64(n)
	if err != nil {
		if err == io.EOF || errors.Is(err, net.ErrClosed) {
			ws.shutdown()
			if n > 0 {
				return n, nil
			}
			return 0, io.ErrUnexpectedEOF
		}
		return n, ws.fail(err)
	}
	return n, nil
}

// peekFrameStart waits until the next frame's header (and a control
// frame's payload) is in the read buffer, without consuming any of it, so
// that a read deadline that passes meanwhile leaves the stream whole: a
// net.Conn's reader may set a deadline, time out and read on (nats-server
// does, to tell a TLS client from a plain one). Other errors are left for
// readHeader to meet again.
func (s *ServerStream) peekFrameStart() error {
	br := s.ws.br
	b, err := br.Peek(2)
	if err != nil {
		return err
	}
	n := 2
	switch l := int(b[1] & 0x7f); {
	case l == 126:
		n += 2
	case l == 127:
		n += 8
	case Opcode(b[0] & 0x0f).isControl():
		n += l
	}
	if b[1]&0x80 != 0 {
		n += 4
	}
	_, err = br.Peek(min(n, br.Size()))
	return err
}

// isTimeout reports whether err is a deadline's. A nil error returns
// before errors.As, whose target escapes: every read of a frame asks.
func isTimeout(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Write sends p as one binary frame, or as frames of 256 KiB at most,
// header and payload in one write each.
func (s *ServerStream) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		bp, pool := relayBuf(len(p))
		n := copy((*bp)[relayHeadroom:], p)
		err := writeFrameAt(s.ws, *bp, n, s.gather)
		pool.Put(bp)
		if err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// closeFrameWait bounds the write of the close frame in Close: a client
// that reads nothing does not hold the closer.
const closeFrameWait = time.Second

// Close tells the client the stream is going away (1001), when no write
// is under way and none was sent, and closes the connection. It does not
// wait for a writer: a write blocked on a client that reads nothing ends
// with the connection.
func (s *ServerStream) Close() error {
	s.closeOnce.Do(func() {
		ws := s.ws
		if ws.wmu.TryLock() {
			if !ws.closeSent {
				if nc := ws.NetConn(); nc != nil {
					_ = nc.SetWriteDeadline(time.Now().Add(closeFrameWait))
				}
				_ = ws.writeFrame(OpClose, []byte{byte(CloseGoingAway >> 8), byte(CloseGoingAway & 0xff)})
			}
			ws.wmu.Unlock()
		}
		ws.shutdown()
	})
	return nil
}

// LocalAddr is the connection's local address.
func (s *ServerStream) LocalAddr() net.Addr { return s.addr(net.Conn.LocalAddr) }

// RemoteAddr is the client's address.
func (s *ServerStream) RemoteAddr() net.Addr { return s.addr(net.Conn.RemoteAddr) }

func (s *ServerStream) addr(f func(net.Conn) net.Addr) net.Addr {
	if nc := s.ws.NetConn(); nc != nil {
		return f(nc)
	}
	return streamAddr{}
}

// SetDeadline sets the connection's read and write deadlines.
func (s *ServerStream) SetDeadline(t time.Time) error {
	return s.deadline(func(nc net.Conn) error { return nc.SetDeadline(t) })
}

// SetReadDeadline sets the connection's read deadline.
func (s *ServerStream) SetReadDeadline(t time.Time) error {
	return s.deadline(func(nc net.Conn) error { return nc.SetReadDeadline(t) })
}

// SetWriteDeadline sets the connection's write deadline.
func (s *ServerStream) SetWriteDeadline(t time.Time) error {
	return s.deadline(func(nc net.Conn) error { return nc.SetWriteDeadline(t) })
}

func (s *ServerStream) deadline(f func(net.Conn) error) error {
	if nc := s.ws.NetConn(); nc != nil {
		return f(nc)
	}
	return errors.New("websocket: no deadlines on this transport")
}

// streamAddr is the address of a stream over a transport that has none.
type streamAddr struct{}

func (streamAddr) Network() string { return "websocket" }
func (streamAddr) String() string  { return "websocket" }
