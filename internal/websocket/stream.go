package websocket

import (
	"errors"
	"io"
	"sync"
)

// A byte stream over a WebSocket (the ports API's raw TCP streams): binary
// messages carry the bytes, the text message EOFMessage half-closes the
// sender's direction, a normal close (1000) ends a stream both of whose
// directions ended, any other close ends it at once (a reset: the reason
// says why).

// EOFMessage is the text message that half-closes a stream's direction.
const EOFMessage = `{"type":"eof"}`

// StreamChunk is the most bytes Splice puts in one message.
const StreamChunk = 256 << 10

// halfCloser is a connection whose write side closes alone (TCP, a pipe).
type halfCloser interface{ CloseWrite() error }

// Splice carries c's bytes over ws both ways until both directions ended
// (each side's EOF was passed on), either side failed, or ws closed. It
// closes c and ws before returning; the error says why a stream ended
// abnormally (nil for a clean end of both directions).
func Splice(ws *Conn, c io.ReadWriteCloser) error {
	var (
		mu       sync.Mutex
		sentEOF  bool // c's EOF went to the peer
		gotEOF   bool // the peer's EOF went to c
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	bothDone := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return sentEOF && gotEOF
	}
	outDone := make(chan struct{})
	go func() { // c → ws
		defer close(outDone)
		buf := make([]byte, StreamChunk)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if werr := ws.WriteMessage(OpBinary, buf[:n]); werr != nil {
					fail(werr)
					c.Close()
					return
				}
			}
			if errors.Is(err, io.EOF) {
				if werr := ws.WriteMessage(OpText, []byte(EOFMessage)); werr != nil {
					fail(werr)
					c.Close()
					return
				}
				mu.Lock()
				sentEOF = true
				done := gotEOF
				mu.Unlock()
				if done {
					_ = ws.CloseWith(CloseNormal, "", 0)
				}
				return
			}
			if err != nil {
				fail(err)
				_ = ws.CloseWith(CloseInternalError, err.Error(), 0)
				return
			}
		}
	}()
	var rbuf []byte // each message is written to c before the next is read
	for {           // ws → c
		op, data, err := ws.readMessage(rbuf)
		rbuf = data
		if err != nil {
			var ce *CloseError
			if !(errors.As(err, &ce) && ce.Code == CloseNormal && bothDone()) {
				fail(err)
			}
			break
		}
		switch op {
		case OpBinary:
			if _, err := c.Write(data); err != nil {
				fail(err)
				_ = ws.CloseWith(CloseInternalError, err.Error(), 0)
			}
		case OpText:
			if string(data) != EOFMessage {
				fail(errors.New("websocket stream: unknown text message"))
				_ = ws.CloseWith(ClosePolicy, "unknown text message", 0)
				break
			}
			if hc, ok := c.(halfCloser); ok {
				_ = hc.CloseWrite()
			}
			mu.Lock()
			gotEOF = true
			done := sentEOF
			mu.Unlock()
			if done {
				_ = ws.CloseWith(CloseNormal, "", 0)
			}
		}
	}
	c.Close()
	ws.shutdown()
	<-outDone
	mu.Lock()
	defer mu.Unlock()
	return firstErr
}
