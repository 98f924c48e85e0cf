// Package pipe provides one end of a pipe: a TCP connection carried over
// NATS as frames (wire.Frame), with credit-based flow control each way and
// TCP's half-close. The agent holds one end (its other side a TCP
// connection to a local port), the control plane the other (a net.Conn for
// its HTTP proxy and its raw WebSocket streams).
//
// Flow control: each end grants its peer a window; a sender has at most a
// window of bytes sent and not yet acknowledged by a credit, and a
// receiver sends a credit once its reader has consumed a quarter window.
// A frame never waits for room in the receiver: what arrives always fits
// the buffer its credit promised, so the one NATS subscription that
// delivers the frames of many pipes never blocks, and a pipe whose reader
// stalls stops only its own sender.
//
// NATS delivers a publisher's messages in order but may drop them (a slow
// consumer, a reconnect): every data frame carries its offset and a gap
// resets the pipe, never corrupts it.
package pipe

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/outposthq/outpost/wire"
)

// ErrReset is returned (wrapped) by reads and writes of a pipe its peer
// reset, or that was reset for a broken frame sequence.
var ErrReset = errors.New("pipe reset")

// Config configures one end of a pipe.
type Config struct {
	// ID names the pipe in frames that carry it.
	ID string
	// WithID makes frames carry ID (the frames the control plane sends).
	WithID bool
	// Send publishes one encoded frame; b is valid only during the call.
	// Required.
	Send func(b []byte) error
	// Window is what this end grants its peer (wire.PipeWindow).
	Window int
	// PeerWindow is what the peer granted this end (wire.PipeWindow).
	PeerWindow int
	// OnClose is called once, when the pipe is closed or reset.
	OnClose func()
	// Local and Remote are the addresses the pipe reports.
	Local, Remote net.Addr
}

// Addr is a pipe's address: a network name and a description.
type Addr struct{ Net, Str string }

func (a Addr) Network() string { return a.Net }
func (a Addr) String() string  { return a.Str }

// Conn is one end of a pipe. Reads are one goroutine's at a time, writes
// too; Deliver, Close, CloseWrite and Reset may come from any goroutine.
type Conn struct {
	cfg Config

	wmu     sync.Mutex // serializes writes and their frame buffer
	wbuf    []byte
	sendErr error

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	queue     [][]byte      // received, unread
	recvOff   uint64        // bytes received
	readOff   uint64        // bytes read
	credited  uint64        // offset of the last credit sent
	peerEOF   bool          // the peer half-closed
	sentOff   uint64        // bytes sent
	peerAck   uint64        // the peer's last credit
	wclosed   bool          // CloseWrite (or Close) sent EOF
	closed    bool          // Close was called
	reset     error         // the pipe was reset: why
	rdl, wdl  time.Time     // deadlines
	closeOnce sync.Once
}

// New returns one end of a pipe.
func New(cfg Config) *Conn {
	if cfg.Window <= 0 {
		cfg.Window = wire.PipeWindow
	}
	if cfg.PeerWindow <= 0 {
		cfg.PeerWindow = wire.PipeWindow
	}
	if cfg.Local == nil {
		cfg.Local = Addr{"pipe", cfg.ID}
	}
	if cfg.Remote == nil {
		cfg.Remote = Addr{"pipe", cfg.ID}
	}
	return &Conn{cfg: cfg, changed: make(chan struct{})}
}

// notifyLocked wakes every waiter.
func (c *Conn) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Deliver takes one frame from the peer. It never blocks on the pipe's
// reader: a frame beyond the window it granted, or out of sequence,
// resets the pipe.
func (c *Conn) Deliver(f wire.Frame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reset != nil {
		return
	}
	switch f.Kind {
	case wire.FrameData:
		switch {
		case c.peerEOF || f.Off != c.recvOff:
			c.resetLocked(fmt.Errorf("%w: frame at offset %d, expected %d (a frame was lost)", ErrReset, f.Off, c.recvOff), true)
			return
		case c.recvOff+uint64(len(f.Data)) > c.readOff+uint64(c.cfg.Window):
			c.resetLocked(fmt.Errorf("%w: the peer sent past its window", ErrReset), true)
			return
		}
		c.recvOff += uint64(len(f.Data))
		if c.closed {
			c.readOff = c.recvOff // nobody reads: discard, keep crediting nothing
			return
		}
		if len(f.Data) > 0 {
			c.queue = append(c.queue, f.Data)
		}
	case wire.FrameCredit:
		if f.Off > c.peerAck && f.Off <= c.sentOff {
			c.peerAck = f.Off
		}
	case wire.FrameEOF:
		if f.Off != c.recvOff {
			c.resetLocked(fmt.Errorf("%w: end at offset %d, expected %d (a frame was lost)", ErrReset, f.Off, c.recvOff), true)
			return
		}
		c.peerEOF = true
	case wire.FrameReset:
		msg := string(f.Data)
		if msg == "" {
			msg = "by the peer"
		}
		c.resetLocked(fmt.Errorf("%w: %s", ErrReset, msg), false)
		return
	}
	c.notifyLocked()
	c.maybeDoneLocked()
}

// wait blocks until changed fires or the deadline passes; it returns
// os.ErrDeadlineExceeded for the latter. Called with mu held; returns
// with it held.
func (c *Conn) wait(deadline time.Time) error {
	ch := c.changed
	if deadline.IsZero() {
		c.mu.Unlock()
		<-ch
		c.mu.Lock()
		return nil
	}
	d := time.Until(deadline)
	if d <= 0 {
		return os.ErrDeadlineExceeded
	}
	t := time.NewTimer(d)
	c.mu.Unlock()
	select {
	case <-ch:
	case <-t.C:
	}
	t.Stop()
	c.mu.Lock()
	return nil
}

// Read reads what the peer sent; io.EOF after the peer's half-close.
func (c *Conn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.queue) == 0 {
		switch {
		case c.reset != nil:
			return 0, c.reset
		case c.closed:
			return 0, net.ErrClosed
		case c.peerEOF:
			return 0, io.EOF
		}
		if err := c.wait(c.rdl); err != nil {
			return 0, err
		}
	}
	n := 0
	for n < len(p) && len(c.queue) > 0 {
		m := copy(p[n:], c.queue[0])
		n += m
		if m == len(c.queue[0]) {
			c.queue[0] = nil
			c.queue = c.queue[1:]
		} else {
			c.queue[0] = c.queue[0][m:]
		}
	}
	c.readOff += uint64(n)
	if c.readOff-c.credited >= uint64(c.cfg.Window/4) && !c.peerEOF {
		c.credited = c.readOff
		off := c.readOff
		c.mu.Unlock()
		c.sendCtl(wire.FrameCredit, off, nil)
		c.mu.Lock()
	}
	return n, nil
}

// Write sends p, waiting for credit as needed.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	n := 0
	for n < len(p) {
		c.mu.Lock()
		var room uint64
		for {
			switch {
			case c.reset != nil:
				err := c.reset
				c.mu.Unlock()
				return n, err
			case c.wclosed || c.closed:
				c.mu.Unlock()
				return n, net.ErrClosed
			}
			if room = c.peerAck + uint64(c.cfg.PeerWindow) - c.sentOff; room > 0 {
				break
			}
			if err := c.wait(c.wdl); err != nil {
				c.mu.Unlock()
				return n, err
			}
		}
		k := min(len(p)-n, wire.PipeChunk, int(min(room, uint64(wire.PipeChunk))))
		off := c.sentOff
		c.sentOff += uint64(k)
		c.mu.Unlock()
		c.wbuf = wire.AppendFrame(c.wbuf[:0], wire.Frame{Kind: wire.FrameData, Pipe: c.cfg.ID, Off: off, Data: p[n : n+k]}, c.cfg.WithID)
		if err := c.cfg.Send(c.wbuf); err != nil {
			c.Reset(fmt.Errorf("send: %w", err))
			return n, err
		}
		n += k
	}
	return n, nil
}

// sendCtl sends a frame without data (credit, EOF) or a reset.
func (c *Conn) sendCtl(kind wire.FrameKind, off uint64, data []byte) {
	b := wire.AppendFrame(make([]byte, 0, wire.FrameHeaderLen+len(data)), wire.Frame{Kind: kind, Pipe: c.cfg.ID, Off: off, Data: data}, c.cfg.WithID)
	_ = c.cfg.Send(b)
}

// CloseWrite half-closes: the peer reads io.EOF after what was written.
func (c *Conn) CloseWrite() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	if c.reset != nil || c.wclosed {
		c.mu.Unlock()
		return nil
	}
	c.wclosed = true
	off := c.sentOff
	c.notifyLocked()
	c.mu.Unlock()
	c.sendCtl(wire.FrameEOF, off, nil)
	c.mu.Lock()
	c.maybeDoneLocked()
	c.mu.Unlock()
	return nil
}

// Close ends the pipe: a clean end (EOF) when the peer already ended its
// side, else a reset, as closing a TCP socket with data unread does.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.queue = nil
	clean := c.peerEOF && c.reset == nil
	wasReset := c.reset != nil
	c.notifyLocked()
	c.mu.Unlock()
	switch {
	case wasReset:
	case clean:
		_ = c.CloseWrite()
	default:
		c.mu.Lock()
		c.reset = fmt.Errorf("%w: closed", net.ErrClosed)
		c.mu.Unlock()
		c.sendCtl(wire.FrameReset, 0, []byte("closed by the other side"))
	}
	c.finish()
	return nil
}

// Reset ends the pipe at once both ways and tells the peer why.
func (c *Conn) Reset(why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resetLocked(fmt.Errorf("%w: %v", ErrReset, why), true)
}

func (c *Conn) resetLocked(err error, tell bool) {
	if c.reset != nil {
		return
	}
	c.reset = err
	c.queue = nil
	c.notifyLocked()
	if tell {
		msg := []byte(err.Error())
		go c.sendCtl(wire.FrameReset, 0, msg) // not under mu: Send may block briefly
	}
	go c.finish()
}

// maybeDoneLocked finishes a pipe both of whose directions ended.
func (c *Conn) maybeDoneLocked() {
	if c.wclosed && c.peerEOF && len(c.queue) == 0 && c.closed {
		go c.finish()
	}
}

// finish calls OnClose once.
func (c *Conn) finish() {
	c.closeOnce.Do(func() {
		if c.cfg.OnClose != nil {
			c.cfg.OnClose()
		}
	})
}

// WaitWriteDone returns once this end half-closed (CloseWrite), closed,
// or the pipe was reset.
func (c *Conn) WaitWriteDone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.wclosed && !c.closed && c.reset == nil {
		_ = c.wait(time.Time{})
	}
}

// Err is why the pipe was reset, nil if it was not.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reset
}

// LocalAddr and RemoteAddr are the configured addresses.
func (c *Conn) LocalAddr() net.Addr  { return c.cfg.Local }
func (c *Conn) RemoteAddr() net.Addr { return c.cfg.Remote }

// SetPeerWindow sets the window the peer granted, once it is known (the
// answer to the open); writes wait for it.
func (c *Conn) SetPeerWindow(n int) {
	c.mu.Lock()
	c.cfg.PeerWindow = n
	c.notifyLocked()
	c.mu.Unlock()
}

// SetDeadline sets both deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl, c.wdl = t, t
	c.notifyLocked()
	c.mu.Unlock()
	return nil
}

// SetReadDeadline bounds the reads waiting now and later.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl = t
	c.notifyLocked()
	c.mu.Unlock()
	return nil
}

// SetWriteDeadline bounds the writes waiting for credit now and later.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdl = t
	c.notifyLocked()
	c.mu.Unlock()
	return nil
}

var _ net.Conn = (*Conn)(nil)
