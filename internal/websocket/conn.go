package websocket

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"
	"unicode/utf8"
)

// Close status codes (RFC 6455 section 7.4.1).
const (
	CloseNormal        = 1000
	CloseGoingAway     = 1001
	CloseProtocolError = 1002
	CloseInvalidData   = 1007
	ClosePolicy        = 1008
	CloseTooBig        = 1009
	CloseInternalError = 1011
	closeNoStatus      = 1005
)

// DefaultMaxMessage is the default bound of a received message.
const DefaultMaxMessage = 16 << 20

// CloseError is what ReadMessage returns once the peer closed: its status
// code and reason.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("websocket: closed with status %d", e.Code)
	}
	return fmt.Sprintf("websocket: closed with status %d: %s", e.Code, e.Reason)
}

// ErrClosed is returned by writes after the connection was closed here.
var ErrClosed = errors.New("websocket: connection closed")

// Conn is one WebSocket connection. One goroutine may read (ReadMessage)
// while others write; writes are serialized. Pings are answered from
// within ReadMessage, so a connection must be read to stay alive.
type Conn struct {
	rwc    io.ReadWriteCloser
	br     *bufio.Reader
	client bool // sends masked frames, expects unmasked ones
	// unmaskedOK: this server agreed to take unmasked frames from its
	// client (UnmaskedHeader); only ServerStream reads them.
	unmaskedOK bool

	// MaxMessage bounds a received message (all its fragments); zero
	// means DefaultMaxMessage. Set it before the first ReadMessage.
	MaxMessage int
	// OnPong, when set before reading, is called from ReadMessage with
	// each pong's payload.
	OnPong func([]byte)
	// Gather, when set before writing, is called around each frame's
	// write; what it returns ends the gather. A connection under TLS
	// (bulkconn) then writes a frame's records in a few large writes,
	// not one syscall a 16 KiB record.
	Gather func() (done func() error)

	wmu       sync.Mutex
	wbuf      []byte
	closeSent bool

	closeOnce sync.Once
}

// newConn wraps rwc; br, when not nil, holds bytes already read from it.
func newConn(rwc io.ReadWriteCloser, br *bufio.Reader, client bool) *Conn {
	if br == nil {
		br = bufio.NewReaderSize(rwc, 32<<10)
	}
	return &Conn{rwc: rwc, br: br, client: client}
}

// ReadMessage returns the next data message, text or binary, with its
// fragments joined. It answers pings, reports pongs to OnPong, and, on the
// peer's close, answers it and returns a *CloseError. A frame that breaks
// the protocol closes the connection with 1002 (1007 for a text message
// that is not UTF-8, 1009 for one over MaxMessage) and returns the error.
func (c *Conn) ReadMessage() (Opcode, []byte, error) { return c.readMessage(nil) }

// ReadMessageInto is ReadMessage into buf's storage: the message returned
// aliases buf when it fits, so it is only good until the next read. A
// reader done with each message before the next (a terminal's output,
// written to stdout) then allocates nothing a message.
func (c *Conn) ReadMessageInto(buf []byte) (Opcode, []byte, error) { return c.readMessage(buf) }

// readMessage is ReadMessage into buf's storage: the message returned may
// alias buf (it does when it fits), so a reader that is done with each
// message before the next reuses one buffer instead of allocating one a
// message.
func (c *Conn) readMessage(buf []byte) (Opcode, []byte, error) {
	limit := c.MaxMessage
	if limit <= 0 {
		limit = DefaultMaxMessage
	}
	msg := buf[:0]
	var msgOp Opcode
	inMessage := false
	for {
		h, err := readHeader(c.br)
		if err != nil {
			return 0, nil, c.fail(err)
		}
		if h.masked == c.client {
			return 0, nil, c.fail(fmt.Errorf("%w: masking is the client's and only the client's", ErrProtocol))
		}
		if !h.op.isControl() {
			switch {
			case h.op == OpContinuation && !inMessage:
				return 0, nil, c.fail(fmt.Errorf("%w: continuation without a message", ErrProtocol))
			case h.op != OpContinuation && inMessage:
				return 0, nil, c.fail(fmt.Errorf("%w: new message inside a fragmented one", ErrProtocol))
			}
			if h.length > int64(limit-len(msg)) {
				_ = c.closeWith(CloseTooBig, "message too big")
				c.shutdown()
				return 0, nil, fmt.Errorf("websocket: message over %d bytes", limit)
			}
		}
		start := len(msg)
		var payload []byte
		if h.op.isControl() {
			payload = make([]byte, h.length)
		} else {
			msg = slices.Grow(msg, int(h.length))[:start+int(h.length)]
			payload = msg[start:]
		}
		if _, err := io.ReadFull(c.br, payload); err != nil {
			return 0, nil, c.fail(unexpected(err))
		}
		if h.masked {
			maskBytes(h.key, 0, payload)
		}
		switch h.op {
		case OpPing:
			if err := c.write(OpPong, payload); err != nil && !errors.Is(err, ErrClosed) {
				return 0, nil, err
			}
			continue
		case OpPong:
			if c.OnPong != nil {
				c.OnPong(payload)
			}
			continue
		case OpClose:
			return 0, nil, c.peerClosed(payload)
		}
		if h.op != OpContinuation {
			msgOp, inMessage = h.op, true
		}
		if h.fin {
			if msgOp == OpText && !utf8.Valid(msg) {
				_ = c.closeWith(CloseInvalidData, "text message is not UTF-8")
				c.shutdown()
				return 0, nil, fmt.Errorf("websocket: text message is not UTF-8")
			}
			return msgOp, msg, nil
		}
	}
}

// peerClosed answers the peer's close frame and makes its CloseError.
func (c *Conn) peerClosed(payload []byte) error {
	ce := &CloseError{Code: closeNoStatus}
	switch {
	case len(payload) == 1:
		return c.fail(fmt.Errorf("%w: close frame of one byte", ErrProtocol))
	case len(payload) >= 2:
		ce.Code = int(binary.BigEndian.Uint16(payload))
		ce.Reason = string(payload[2:])
		if !validCloseCode(ce.Code) || !utf8.ValidString(ce.Reason) {
			return c.fail(fmt.Errorf("%w: invalid close frame", ErrProtocol))
		}
	}
	code := ce.Code
	if code == closeNoStatus {
		code = CloseNormal
	}
	_ = c.closeWith(code, "")
	c.shutdown()
	return ce
}

// validCloseCode reports whether a peer may send code (RFC 6455 7.4).
func validCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1011:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// fail closes the connection after a read error: with 1002 for a protocol
// error, without a close frame when the transport failed.
func (c *Conn) fail(err error) error {
	if errors.Is(err, ErrProtocol) {
		_ = c.closeWith(CloseProtocolError, "protocol error")
	}
	c.shutdown()
	return err
}

// WriteMessage sends p as one message of op (OpText or OpBinary).
func (c *Conn) WriteMessage(op Opcode, p []byte) error {
	if op != OpText && op != OpBinary {
		return fmt.Errorf("websocket: WriteMessage of opcode %#x", byte(op))
	}
	return c.write(op, p)
}

// Message is one data message of WriteMessages.
type Message struct {
	Op   Opcode // OpText or OpBinary
	Data []byte
}

// WriteMessages sends msgs, in order, as WriteMessage would each: when
// they are small together (16 KiB or less), their frames go out in one
// write to the transport, so a message and the one that always follows it
// (output and its cursor, say) cost the peer one read and one wake-up,
// not two. (Larger batches go message by message, so the write buffer
// kept between writes stays small.)
func (c *Conn) WriteMessages(msgs ...Message) error {
	total := 0
	for _, m := range msgs {
		if m.Op != OpText && m.Op != OpBinary {
			return fmt.Errorf("websocket: WriteMessages of opcode %#x", byte(m.Op))
		}
		total += len(m.Data)
	}
	small := total <= directWrite
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !small || len(msgs) == 1 {
		for _, m := range msgs {
			if err := c.writeLocked(m.Op, m.Data); err != nil {
				return err
			}
		}
		return nil
	}
	if c.closeSent {
		return ErrClosed
	}
	if c.Gather != nil {
		done := c.Gather()
		err := c.writeBatch(msgs)
		if derr := done(); err == nil {
			err = derr
		}
		return err
	}
	return c.writeBatch(msgs)
}

// writeBatch writes small msgs' frames in one write, under wmu.
func (c *Conn) writeBatch(msgs []Message) error {
	c.wbuf = c.wbuf[:0]
	for _, m := range msgs {
		var key [4]byte
		if c.client {
			if _, err := rand.Read(key[:]); err != nil {
				return err
			}
		}
		c.wbuf = appendFrame(c.wbuf, m.Op, m.Data, c.client, key)
	}
	_, err := c.rwc.Write(c.wbuf)
	return err
}

// Ping sends a ping carrying p (at most 125 bytes).
func (c *Conn) Ping(p []byte) error {
	if len(p) > maxControlPayload {
		return fmt.Errorf("websocket: ping payload over %d bytes", maxControlPayload)
	}
	return c.write(OpPing, p)
}

// write sends one frame; after a close frame was sent, nothing more is.
func (c *Conn) write(op Opcode, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(op, p)
}

func (c *Conn) writeLocked(op Opcode, p []byte) error {
	if c.closeSent {
		return ErrClosed
	}
	if c.Gather != nil {
		done := c.Gather()
		err := c.writeFrame(op, p)
		if derr := done(); err == nil {
			err = derr
		}
		return err
	}
	return c.writeFrame(op, p)
}

// writeFrame writes one frame of op carrying p.
func (c *Conn) writeFrame(op Opcode, p []byte) error {
	var key [4]byte
	if c.client {
		if _, err := rand.Read(key[:]); err != nil {
			return err
		}
	}
	if op == OpClose {
		c.closeSent = true
	}
	if !c.client && len(p) > directWrite {
		// A large unmasked payload goes out as it is, after its header,
		// in one writev: no copy.
		c.wbuf = appendLength(append(c.wbuf[:0], 0x80|byte(op)), len(p), false)
		bufs := net.Buffers{c.wbuf, p}
		_, err := bufs.WriteTo(c.rwc)
		return err
	}
	if len(p) > directWrite {
		// A large masked frame is built in a pooled buffer: no large
		// buffer is kept for the life of an idle connection.
		bp := bigFrames.Get().(*[]byte)
		*bp = appendFrame((*bp)[:0], op, p, c.client, key)
		_, err := c.rwc.Write(*bp)
		bigFrames.Put(bp)
		return err
	}
	c.wbuf = appendFrame(c.wbuf[:0], op, p, c.client, key)
	_, err := c.rwc.Write(c.wbuf)
	return err
}

// bigFrames are the buffers of large masked frames.
var bigFrames = sync.Pool{New: func() any { b := make([]byte, 0, StreamChunk+16); return &b }}

// directWrite is the payload size from which a server's frame is written
// without copying the payload.
const directWrite = 16 << 10

// closeWith sends a close frame of code and reason, once.
func (c *Conn) closeWith(code int, reason string) error {
	if len(reason) > maxControlPayload-2 {
		reason = reason[:maxControlPayload-2]
	}
	p := binary.BigEndian.AppendUint16(nil, uint16(code))
	return c.write(OpClose, append(p, reason...))
}

// CloseWith starts the closing handshake with code and reason, waits up
// to wait for the peer's close (reading and dropping what comes before
// it) when wait > 0, and closes the connection. Only call it when no other
// goroutine reads, or with wait 0.
func (c *Conn) CloseWith(code int, reason string, wait time.Duration) error {
	err := c.closeWith(code, reason)
	if err == nil && wait > 0 {
		t := time.AfterFunc(wait, c.shutdown)
		for {
			if _, _, rerr := c.ReadMessage(); rerr != nil {
				break
			}
		}
		t.Stop()
	}
	c.shutdown()
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// Close sends a normal close frame, if none was sent, and closes the
// connection without waiting. It is idempotent.
func (c *Conn) Close() error { return c.CloseWith(CloseNormal, "", 0) }

// shutdown closes the transport, once; a blocked ReadMessage returns.
func (c *Conn) shutdown() {
	c.closeOnce.Do(func() { _ = c.rwc.Close() })
}

// NetConn is the network connection under c, nil when it runs over
// something else.
func (c *Conn) NetConn() net.Conn {
	nc, _ := c.rwc.(net.Conn)
	return nc
}
