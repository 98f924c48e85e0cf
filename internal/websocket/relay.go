package websocket

import (
	"errors"
	"io"
	"sync"
)

// A byte stream in a WebSocket (ServerStream, StreamConn) carries a
// protocol that a peer speaks inside binary frames (NATS, as a nats.go
// client sends it), for thousands of mostly idle connections at once:
// message boundaries do not matter, payloads stream through without being
// gathered into whole messages, and an idle stream holds small buffers
// only.

// relaySmall is a StreamConn's read buffer, and the most a ServerStream's
// frame carries from a small buffer, ungathered; relayLarge, pooled, is
// the most a frame written from a stream carries (a file or an output on
// its way).
const (
	relaySmall = 4 << 10
	relayLarge = 256 << 10
)

// relayHeadroom is the room kept before each payload in a relayBufs or
// relaySmallBufs buffer for the frame's header (at most 10 bytes
// unmasked).
const relayHeadroom = 10

var relayBufs = sync.Pool{New: func() any { b := make([]byte, relayHeadroom+relayLarge); return &b }}

// relaySmallBufs hold the frames of writes of up to relaySmall bytes. Most
// of what an agent's stream writes (a NATS PING, a heartbeat, a request) is
// a few hundred bytes, thousands of agents' a second: a relayLarge buffer
// (and a gathering one) for each kept dozens of them live in a busy control
// plane.
var relaySmallBufs = sync.Pool{New: func() any { b := make([]byte, relayHeadroom+relaySmall); return &b }}

// relayBuf is a pooled buffer for a frame carrying up to n payload bytes,
// with the pool to put it back into.
func relayBuf(n int) (*[]byte, *sync.Pool) {
	if n <= relaySmall {
		return relaySmallBufs.Get().(*[]byte), &relaySmallBufs
	}
	return relayBufs.Get().(*[]byte), &relayBufs
}

// StreamOptions tune a ServerStream; the zero value is ready.
type StreamOptions struct {
	// Gather, when set, is called around each frame of more than
	// relaySmall (4 KiB) payload bytes written to the peer; the done it
	// returns is called after the write. A TLS transport uses it to put a
	// large frame's records out in few syscalls.
	Gather func() (done func() error)
}

// relayControl handles one control frame: a ping is answered, a pong
// dropped, a close answered and the stream done.
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

// writeFrameAt writes buf[relayHeadroom:relayHeadroom+n] as one unmasked
// binary frame, its header put just before the payload; gather, when set,
// is called around the write of a frame of more than relaySmall bytes. A
// smaller one is a single TLS record (but in a connection's first few
// records, while crypto/tls still grows them from ~1.2 KiB), so gathering
// it would only take a buffer.
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
	if gather != nil && n > relaySmall {
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
