package controlplane

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/outposthq/outpost/wire"
)

// NATSPath is where agents reach NATS over WebSocket on the control plane's
// own port: one port (443) carries the API and every agent connection.
const NATSPath = "/v1/nats"

// natsDialTimeout bounds the dial to the embedded server's WebSocket
// listener on loopback.
const natsDialTimeout = 5 * time.Second

// handleNATS passes a WebSocket upgrade on NATSPath to the embedded server's
// WebSocket listener on loopback and splices the two connections: TLS ends
// here, NATS (and its own authentication, the agent's JWT) runs inside.
func (s *Server) handleNATS(w http.ResponseWriter, r *http.Request) {
	if s.natsWS == "" {
		writeError(s.log, w, r, wire.Errorf(wire.CodeNotFound, "", "NATS over WebSocket is served only with the embedded NATS server"))
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		writeError(s.log, w, r, wire.Errorf(wire.CodeInvalidArgument, "", "%s takes a WebSocket upgrade", NATSPath))
		return
	}
	up, err := net.DialTimeout("tcp", s.natsWS, natsDialTimeout)
	if err != nil {
		writeError(s.log, w, r, wire.Errorf(wire.CodeUnavailable, "", "embedded NATS: %v", err))
		return
	}
	down, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		writeError(s.log, w, r, fmt.Errorf("hijack: %w", err))
		return
	}
	_ = down.SetDeadline(time.Time{}) // the server's header and body deadlines no longer apply
	if err := r.Write(up); err != nil {
		up.Close()
		down.Close()
		return
	}
	// Bytes the client sent after its request, already read into buf.
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			up.Close()
			down.Close()
			return
		}
	}
	s.splices.Add(1)
	go func() {
		defer s.splices.Done()
		splice(down, up)
	}()
}

// splice copies both ways until either side ends, then closes both. down
// is the agent's connection (TLS), up the embedded server's.
func splice(down, up net.Conn) {
	var once sync.Once
	closeBoth := func() { down.Close(); up.Close() }
	done := make(chan struct{})
	go func() {
		defer close(done)
		spliceCopy(down, up, gatherOf(down))
		once.Do(closeBoth)
	}()
	spliceFromAgent(up, down)
	once.Do(closeBoth)
	<-done
}

// Splice buffers: an idle connection holds a small one; a connection whose
// reads fill it (a file or an output stream on its way) reads into a large
// pooled one, so that a GiB takes a few thousand reads and writes rather
// than 32,768 of each.
const (
	spliceSmall = 32 << 10
	spliceLarge = 256 << 10
)

var spliceBufs = sync.Pool{New: func() any { b := make([]byte, spliceLarge); return &b }}

// spliceCopy copies the embedded server's connection (src) to the agent's
// (dst) until either fails. With g (dst's gatherConn), the TLS records of
// each read's bytes go out gathered.
func spliceCopy(dst, src net.Conn, g *gatherConn) {
	small := make([]byte, spliceSmall)
	var large *[]byte
	defer func() {
		if large != nil {
			spliceBufs.Put(large)
		}
	}()
	for {
		buf := small
		if large != nil {
			buf = *large
		}
		n, err := src.Read(buf)
		if n > 0 {
			if werr := writeGathered(dst, buf[:n], g); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
		switch {
		case large == nil && n == len(buf):
			large = spliceBufs.Get().(*[]byte)
		case large != nil && n < len(buf)/2:
			spliceBufs.Put(large)
			large = nil
		}
	}
}

// writeGathered writes p to dst, gathering its TLS records on g if any.
func writeGathered(dst net.Conn, p []byte, g *gatherConn) error {
	if g == nil {
		_, err := dst.Write(p)
		return err
	}
	done := g.Gather()
	_, err := dst.Write(p)
	if ferr := done(); err == nil {
		err = ferr
	}
	return err
}

// What comes from the agent: crypto/tls hands out at most one record, 16
// KiB, a read. Full records come in bursts (a file's or an output's
// bytes); they are held and written to the embedded server together, up to
// spliceLarge, rather than 16 KiB a write. A record that is not full ends
// what the agent wrote: it goes out at once with what was held, as does
// what is held when no record follows within coalesceWait.
const (
	tlsMaxRecord = 16 << 10
	coalesceWait = time.Millisecond
)

var heldBufs = sync.Pool{New: func() any { b := make([]byte, 0, spliceLarge); return &b }}

// spliceFromAgent copies the agent's connection (src) to the embedded
// server's (dst) until either fails.
func spliceFromAgent(dst, src net.Conn) {
	buf := make([]byte, 2*tlsMaxRecord)
	var held *[]byte // pooled, while a burst is on
	defer func() {
		if held != nil {
			heldBufs.Put(held)
		}
	}()
	flush := func() error {
		if held == nil || len(*held) == 0 {
			return nil
		}
		_, err := dst.Write(*held)
		*held = (*held)[:0]
		return err
	}
	for {
		waiting := held != nil && len(*held) > 0
		if waiting {
			_ = src.SetReadDeadline(time.Now().Add(coalesceWait))
		}
		n, err := src.Read(buf)
		if waiting {
			_ = src.SetReadDeadline(time.Time{})
		}
		switch {
		case n == tlsMaxRecord && err == nil:
			if held == nil {
				held = heldBufs.Get().(*[]byte)
			}
			*held = append(*held, buf[:n]...)
			if len(*held) > spliceLarge-tlsMaxRecord && flush() != nil {
				return
			}
			continue
		case n > 0 && waiting:
			*held = append(*held, buf[:n]...)
			if flush() != nil {
				return
			}
		case n > 0:
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			var ne net.Error
			if waiting && errors.As(err, &ne) && ne.Timeout() {
				if flush() != nil {
					return
				}
				continue
			}
			_ = flush()
			return
		}
		if held != nil {
			heldBufs.Put(held)
			held = nil
		}
	}
}
