package pipe

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Stream is one end of a pipe carried on a connection of its own (a bulk
// connection, wire.BulkPath) instead of as frames over NATS: the same
// ends as Conn (half-close, reset, a Close that is clean only after the
// peer's EOF) as stream frames (wire.ParseStreamHeader) on the
// connection. TCP is the flow control; a connection that ends without
// the peer's EOF is a reset.
type Stream struct {
	conn    net.Conn
	r       io.Reader                  // reads conn, with the bytes read ahead first
	gather  func() (done func() error) // gathers the TLS records of one write; nil: none
	onClose func()

	rmu  sync.Mutex // reads
	left int        // bytes of the current data frame not yet read
	hdr  [wire.StreamHeaderLen]byte

	wmu  sync.Mutex // writes of frames
	torn bool       // a write failed, maybe part way through a frame; under wmu

	mu        sync.Mutex
	wclosed   bool  // this end's EOF was sent
	peerEOF   bool  // the peer's EOF was read
	closed    bool  // Close was called
	reset     error // why the stream was reset (wraps ErrReset or net.ErrClosed)
	wdone     chan struct{}
	wdoneOnce sync.Once
	closeOnce sync.Once
}

// StreamConfig configures NewStream.
type StreamConfig struct {
	// Reader reads the connection (the bytes read ahead of it first); nil:
	// the connection.
	Reader io.Reader
	// Gather, if set, gathers the TLS records of one write into few
	// writes of the connection (bulkconn.Conn.Gather).
	Gather func() (done func() error)
	// OnClose is called once when the stream ended both ways or was reset.
	OnClose func()
}

// NewStream returns the pipe on conn.
func NewStream(conn net.Conn, cfg StreamConfig) *Stream {
	s := &Stream{conn: conn, r: cfg.Reader, gather: cfg.Gather, onClose: cfg.OnClose, wdone: make(chan struct{})}
	if s.r == nil {
		s.r = conn
	}
	// A frame's header comes from the buffer, with the start of its data;
	// reads of a frame's rest as large as the buffer go straight to the
	// connection.
	s.r = bufio.NewReaderSize(s.r, streamReadBuf)
	return s
}

// streamPiece is how many bytes one data frame carries at most.
const streamPiece = wire.PipeChunk

// closeLinger bounds how long Close waits to send this end's EOF.
const closeLinger = 5 * time.Second

// streamReadBuf is the read buffer of a stream: a plain TCP connection
// would otherwise take a read syscall for each frame's header.
const streamReadBuf = 32 << 10

// Read reads what the peer sent; io.EOF after the peer's half-close.
func (s *Stream) Read(p []byte) (int, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if len(p) == 0 {
		return 0, nil
	}
	for s.left == 0 {
		if err := s.readErr(); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(s.r, s.hdr[:]); err != nil {
			return 0, s.broken(err)
		}
		kind, n, err := wire.ParseStreamHeader(s.hdr[:])
		if err != nil {
			s.Reset(err)
			return 0, s.readErr()
		}
		switch kind {
		case wire.StreamData:
			s.left = n
		case wire.StreamEOF:
			s.mu.Lock()
			s.peerEOF = true
			s.mu.Unlock()
			return 0, io.EOF
		case wire.StreamReset:
			why := make([]byte, n)
			if _, err := io.ReadFull(s.r, why); err != nil {
				return 0, s.broken(err)
			}
			s.resetBy(fmt.Errorf("%w: %s", ErrReset, why), false)
			return 0, s.readErr()
		}
	}
	// The sender wrote the frame at once: waiting for all of it (or for
	// p to fill) costs no latency and makes few large reads.
	m, err := io.ReadFull(s.r, p[:min(len(p), s.left)])
	s.left -= m
	if err != nil {
		return m, s.broken(err)
	}
	return m, nil
}

// readErr is what a read returns once no data is left: the reset, a
// closed stream, or the peer's EOF.
func (s *Stream) readErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.reset != nil:
		return s.reset
	case s.closed:
		return net.ErrClosed
	case s.peerEOF:
		return io.EOF
	}
	return nil
}

// broken handles a read or write error of the connection: a reset (the
// one made here if any; else the connection ended without the peer's
// EOF, or failed).
func (s *Stream) broken(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	s.resetBy(fmt.Errorf("%w: the connection ended: %v", ErrReset, err), false)
	return s.readErr()
}

// Write sends p in data frames.
func (s *Stream) Write(p []byte) (int, error) {
	bp := frameBufs.Get().(*[]byte)
	defer frameBufs.Put(bp)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	n := 0
	for n < len(p) {
		if err := s.writable(); err != nil {
			return n, err
		}
		k := min(len(p)-n, streamPiece)
		b := append((*bp)[:wire.StreamHeaderLen], p[n:n+k]...)
		if err := s.send(wire.StreamData, b); err != nil {
			return n, err
		}
		n += k
	}
	return n, nil
}

// ReadFrom sends what r reads, read straight into the frames, until r's
// EOF (io.Copy uses it: one copy less). Frames are sent under the write
// lock, the reads of r are not: a Reset meanwhile still tells the peer
// why.
func (s *Stream) ReadFrom(r io.Reader) (int64, error) {
	bp := frameBufs.Get().(*[]byte)
	defer frameBufs.Put(bp)
	buf := *bp
	var total int64
	for {
		if err := s.writable(); err != nil {
			return total, err
		}
		m, rerr := r.Read(buf[wire.StreamHeaderLen : wire.StreamHeaderLen+streamPiece])
		if m > 0 {
			if err := s.sendData(buf[:wire.StreamHeaderLen+m]); err != nil {
				return total, err
			}
			total += int64(m)
		}
		if errors.Is(rerr, io.EOF) {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

// sendData sends data frame b under the write lock, unless the stream
// was half-closed or reset since the caller looked.
func (s *Stream) sendData(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	return s.send(wire.StreamData, b)
}

// frameBufs are buffers of one data frame (header and streamPiece bytes),
// taken for one Write or ReadFrom: an idle stream holds none.
var frameBufs = sync.Pool{New: func() any {
	b := make([]byte, wire.StreamHeaderLen+streamPiece)
	return &b
}}

// writable says why nothing more may be written, if so.
func (s *Stream) writable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.reset != nil:
		return s.reset
	case s.wclosed || s.closed:
		return net.ErrClosed
	}
	return nil
}

// send writes frame b (its header space first) of kind; a failed write
// resets the stream. Under wmu.
func (s *Stream) send(kind byte, b []byte) error {
	wire.PutStreamHeader(b, kind, len(b)-wire.StreamHeaderLen)
	var err error
	if s.gather != nil {
		done := s.gather()
		_, err = s.conn.Write(b)
		if ferr := done(); err == nil {
			err = ferr
		}
	} else {
		_, err = s.conn.Write(b)
	}
	if err != nil {
		s.torn = true
		s.resetBy(fmt.Errorf("%w: send: %v", ErrReset, err), false)
		if rerr := s.readErr(); rerr != nil {
			return rerr
		}
		return err
	}
	return nil
}

// CloseWrite half-closes: the peer reads io.EOF after what was written.
func (s *Stream) CloseWrite() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if s.reset != nil || s.wclosed {
		s.mu.Unlock()
		return nil
	}
	s.wclosed = true
	s.mu.Unlock()
	s.wdoneOnce.Do(func() { close(s.wdone) })
	var h [wire.StreamHeaderLen]byte
	return s.send(wire.StreamEOF, h[:])
}

// Close ends the stream: a clean end (this end's EOF, then the
// connection closed) when the peer already ended its side, else a reset,
// as closing a TCP socket with data unread does.
func (s *Stream) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	clean := s.peerEOF && s.reset == nil
	s.mu.Unlock()
	if clean {
		// The EOF goes out after what was written, unless the peer has
		// stopped reading for closeLinger.
		_ = s.conn.SetWriteDeadline(time.Now().Add(closeLinger))
		_ = s.CloseWrite()
	} else {
		s.Reset(errors.New("closed by the other side"))
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wdoneOnce.Do(func() { close(s.wdone) })
	s.conn.Close()
	s.finish()
	return nil
}

// Reset ends the stream at once both ways and tells the peer why (when
// no write is under way; else the peer sees its connection end).
func (s *Stream) Reset(why error) {
	s.resetBy(fmt.Errorf("%w: %v", ErrReset, why), true)
}

// resetBy resets with err once; tell sends the peer a reset frame first.
// A write under way when told ends within a second (the write deadline;
// between two frames at once) and the frame follows it, off the caller's
// goroutine: Reset never waits for a peer that stopped reading.
func (s *Stream) resetBy(err error, tell bool) {
	s.mu.Lock()
	if s.reset != nil {
		s.mu.Unlock()
		return
	}
	s.reset = err
	s.mu.Unlock()
	s.wdoneOnce.Do(func() { close(s.wdone) })
	if !tell {
		s.end()
		return
	}
	_ = s.conn.SetWriteDeadline(time.Now().Add(time.Second))
	if s.wmu.TryLock() {
		s.tellReset(err)
		s.end()
		return
	}
	go func() {
		s.wmu.Lock()
		s.tellReset(err)
		s.end()
	}()
}

// tellReset sends the reset frame with err's reason, unless a write
// failed part way through a frame (the peer could not parse it). Under
// wmu, which it releases.
func (s *Stream) tellReset(err error) {
	defer s.wmu.Unlock()
	if s.torn {
		return
	}
	msg := err.Error()
	msg = msg[:min(len(msg), wire.MaxStreamReason)]
	b := make([]byte, wire.StreamHeaderLen, wire.StreamHeaderLen+len(msg))
	b = append(b, msg...)
	wire.PutStreamHeader(b, wire.StreamReset, len(msg))
	_, _ = s.conn.Write(b)
}

// end closes the connection and calls OnClose.
func (s *Stream) end() {
	s.conn.Close()
	s.finish()
}

// finish calls OnClose once.
func (s *Stream) finish() {
	s.closeOnce.Do(func() {
		if s.onClose != nil {
			s.onClose()
		}
	})
}

// WaitWriteDone returns once this end half-closed (CloseWrite), closed,
// or the stream was reset.
func (s *Stream) WaitWriteDone() { <-s.wdone }

// Err is why the stream was reset, nil if it was not.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reset
}

// LocalAddr and RemoteAddr are the connection's.
func (s *Stream) LocalAddr() net.Addr  { return s.conn.LocalAddr() }
func (s *Stream) RemoteAddr() net.Addr { return s.conn.RemoteAddr() }

// SetDeadline, SetReadDeadline and SetWriteDeadline are the connection's.
func (s *Stream) SetDeadline(t time.Time) error      { return s.conn.SetDeadline(t) }
func (s *Stream) SetReadDeadline(t time.Time) error  { return s.conn.SetReadDeadline(t) }
func (s *Stream) SetWriteDeadline(t time.Time) error { return s.conn.SetWriteDeadline(t) }

var _ net.Conn = (*Stream)(nil)
