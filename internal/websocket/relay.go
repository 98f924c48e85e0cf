package websocket

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// A relay carries a byte protocol that a peer speaks inside a WebSocket
// (NATS, which a nats.go client sends in binary frames) to a plain
// connection and back, for thousands of mostly idle connections at once:
// message boundaries do not matter, payloads stream through without being
// gathered into whole messages, and an idle relay holds small buffers only.

// relaySmall is the read buffer of an idle direction; relayLarge, pooled,
// is taken while reads fill the small one (a file or an output on its way).
const (
	relaySmall = 4 << 10
	relayLarge = 256 << 10
)

// relayOutSmall is the read buffer of an idle relay's plain side: what
// comes from there to an agent is mostly requests of a few hundred bytes;
// a read that fills it takes a pooled relayLarge one. 10,000 agents'
// relays held 45 MB of 4 KiB buffers here.
const relayOutSmall = 1 << 10

// relayHeadroom is the room kept before each payload read from the plain
// side for the frame's header (at most 10 bytes unmasked).
const relayHeadroom = 10

var relayBufs = sync.Pool{New: func() any { b := make([]byte, relayHeadroom+relayLarge); return &b }}

// RelayOptions tune a relay; the zero value is ready.
type RelayOptions struct {
	// Gather, when set, is called around each frame written to the peer;
	// the done it returns is called after the write. A TLS transport uses
	// it to put a large frame's records out in few syscalls.
	Gather func() (done func() error)
}

// Relay carries the payload of every data frame ws receives to c, and
// every read from c to ws as one binary frame, until either side ends or
// fails; then it closes both and returns why (nil for a normal close by
// the peer or an EOF from c). It answers pings; a frame that breaks the
// protocol closes ws with 1002. Only one Relay reads ws; nothing else may
// read ws or c meanwhile.
func Relay(ws *Conn, c net.Conn, opt RelayOptions) error {
	if ws.client {
		return errors.New("websocket: Relay runs on the server side")
	}
	out := make(chan error, 1)
	go func() { out <- relayOut(ws, c, opt) }()
	inErr := relayIn(ws, c)
	c.Close()
	ws.shutdown()
	outErr := <-out
	if inErr != nil {
		return inErr
	}
	return outErr
}

// relayIn streams the payloads of ws's data frames to c.
func relayIn(ws *Conn, c net.Conn) error {
	for {
		h, err := readHeader(ws.br)
		if err == io.EOF || errors.Is(err, net.ErrClosed) {
			ws.shutdown() // the peer left, or the other direction ended the relay
			return nil
		}
		if err != nil {
			return ws.fail(err)
		}
		if !h.masked && !ws.unmaskedOK {
			return ws.fail(fmt.Errorf("%w: masking is the client's and only the client's", ErrProtocol))
		}
		if h.op.isControl() {
			if done, err := relayControl(ws, h); done || err != nil {
				return err
			}
			continue
		}
		if h.op == OpText {
			// NATS travels in binary frames; text would have to be
			// checked as UTF-8 across frames, for nothing.
			_ = ws.closeWith(CloseInvalidData, "binary frames only")
			return fmt.Errorf("websocket: relay got a text frame")
		}
		if err := relayPayload(ws, c, h); err != nil {
			return err
		}
	}
}

// relayControl handles one control frame: a ping is answered, a pong
// dropped, a close answered and the relay done.
func relayControl(ws *Conn, h header) (done bool, err error) {
	var b [maxControlPayload]byte
	p := b[:h.length]
	if _, err := io.ReadFull(ws.br, p); err != nil {
		return true, ws.fail(unexpected(err))
	}
	maskBytes(h.key, 0, p)
	switch h.op {
	case OpPing:
		if err := ws.write(OpPong, p); err != nil {
			return true, err
		}
		return false, nil
	case OpClose:
		var ce *CloseError
		if err := ws.peerClosed(p); errors.As(err, &ce) {
			return true, nil
		} else {
			return true, err
		}
	}
	return false, nil
}

// relayPayload copies one data frame's payload to c, unmasked: a small
// one straight from ws's read buffer (an idle relay holds no buffer of its
// own), a large one through a pooled buffer.
func relayPayload(ws *Conn, c net.Conn, h header) error {
	if h.length <= relaySmall {
		return relayBuffered(ws, c, h)
	}
	bp := relayBufs.Get().(*[]byte)
	defer relayBufs.Put(bp)
	buf := (*bp)[relayHeadroom:]
	pos := 0
	for left := h.length; left > 0; {
		n := int(min(left, int64(len(buf))))
		if _, err := io.ReadFull(ws.br, buf[:n]); err != nil {
			return ws.fail(unexpected(err))
		}
		if h.masked {
			pos = maskBytes(h.key, pos, buf[:n])
		}
		if _, err := c.Write(buf[:n]); err != nil {
			_ = ws.closeWith(CloseGoingAway, "")
			return err
		}
		left -= int64(n)
	}
	return nil
}

// relayBuffered is relayPayload for a small payload: it is unmasked in
// place in ws's read buffer, written to c, then discarded from the buffer.
func relayBuffered(ws *Conn, c net.Conn, h header) error {
	pos := 0
	for left := int(h.length); left > 0; {
		if ws.br.Buffered() == 0 {
			if _, err := ws.br.Peek(1); err != nil {
				return ws.fail(unexpected(err))
			}
		}
		p, _ := ws.br.Peek(min(left, ws.br.Buffered()))
		if h.masked {
			pos = maskBytes(h.key, pos, p)
		}
		if _, err := c.Write(p); err != nil {
			_ = ws.closeWith(CloseGoingAway, "")
			return err
		}
		_, _ = ws.br.Discard(len(p))
		left -= len(p)
	}
	return nil
}

// relayOut sends each read from c to ws as one binary frame, its header
// written into the room kept before the payload: one write a frame.
func relayOut(ws *Conn, c net.Conn, opt RelayOptions) error {
	small := make([]byte, relayHeadroom+relayOutSmall)
	var large *[]byte
	defer func() {
		if large != nil {
			relayBufs.Put(large)
		}
	}()
	for {
		buf := small
		if large != nil {
			buf = *large
		}
		n, err := c.Read(buf[relayHeadroom:])
		if n > 0 {
			if werr := writeFrameAt(ws, buf, n, opt.Gather); werr != nil {
				c.Close()
				return werr
			}
		}
		if err != nil {
			_ = ws.closeWith(CloseGoingAway, "")
			ws.shutdown()
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe) {
				return nil
			}
			return err
		}
		switch full := n == len(buf)-relayHeadroom; {
		case large == nil && full:
			large = relayBufs.Get().(*[]byte)
		case large != nil && n < relayLarge/2:
			relayBufs.Put(large)
			large = nil
		}
	}
}

// writeFrameAt writes buf[relayHeadroom:relayHeadroom+n] as one unmasked
// binary frame, its header put just before the payload.
func writeFrameAt(ws *Conn, buf []byte, n int, gather func() func() error) error {
	var hb [relayHeadroom]byte
	h := appendLength(append(hb[:0], 0x80|byte(OpBinary)), n, false)
	start := relayHeadroom - len(h)
	copy(buf[start:], h)
	ws.wmu.Lock()
	defer ws.wmu.Unlock()
	if ws.closeSent {
		return ErrClosed
	}
	var done func() error
	if gather != nil {
		done = gather()
	}
	_, err := ws.rwc.Write(buf[start : relayHeadroom+n])
	if done != nil {
		if ferr := done(); err == nil {
			err = ferr
		}
	}
	return err
}
