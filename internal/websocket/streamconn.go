package websocket

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// UnmaskedHeader, sent with a client's handshake and echoed by a server
// that agrees, lets that client send its frames unmasked. Masking (RFC 6455
// 5.3) keeps a client's bytes from being read as requests by proxies that
// do not understand WebSocket; inside TLS, between Outpost's own agent and
// control plane, no proxy can read them, and masking every byte the agent
// uploads costs more CPU than the TLS itself. ServerStream's side agrees.
const UnmaskedHeader = "Outpost-Websocket-Unmasked"

// StreamConn is the client side of a byte stream carried in a WebSocket's
// binary frames (what ServerStream serves): what is written goes out as one
// binary frame a Write, and Read returns the payloads of the frames the
// server sends, as one stream. It answers pings and ends at the server's
// close. One goroutine may read while another writes.
type StreamConn struct {
	net.Conn
	br       *bufio.Reader
	unmasked bool // the server agreed to UnmaskedHeader

	left int64 // payload of the current frame still to read

	wmu  sync.Mutex
	wbuf []byte
}

// DialStream runs the opening handshake for path on c (a connection to
// host, TLS already when it should be) and returns the stream; header is
// sent with it. ctx bounds the handshake. c is closed on failure.
func DialStream(ctx context.Context, c net.Conn, host, path string, header http.Header) (*StreamConn, error) {
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
		defer c.SetDeadline(time.Time{})
	}
	key, err := newKey()
	if err != nil {
		c.Close()
		return nil, err
	}
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path}, Host: host, Header: http.Header{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	setUpgrade(req.Header, header, key)
	req.Header.Set(UnmaskedHeader, "1")
	if err := req.Write(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("websocket: handshake: %w", err)
	}
	br := bufio.NewReaderSize(c, relaySmall)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("websocket: handshake: %w", err)
	}
	resp.Body.Close()
	if !upgradedTo(resp, key) {
		c.Close()
		return nil, fmt.Errorf("%w: %s", ErrNotUpgraded, resp.Status)
	}
	return &StreamConn{Conn: c, br: br, unmasked: resp.Header.Get(UnmaskedHeader) == "1"}, nil
}

func (s *StreamConn) Read(p []byte) (int, error) {
	for s.left == 0 {
		h, err := readHeader(s.br)
		if err != nil {
			return 0, err
		}
		if h.masked {
			return 0, fmt.Errorf("%w: a masked frame from the server", ErrProtocol)
		}
		switch h.op {
		case OpBinary, OpContinuation:
			s.left = h.length
		case OpText:
			return 0, errors.New("websocket: a text frame in a byte stream")
		default:
			var b [maxControlPayload]byte
			if _, err := io.ReadFull(s.br, b[:h.length]); err != nil {
				return 0, unexpected(err)
			}
			switch h.op {
			case OpPing:
				if err := s.writeFrame(OpPong, b[:h.length]); err != nil {
					return 0, err
				}
			case OpClose:
				_ = s.writeFrame(OpClose, b[:min(h.length, 2)])
				return 0, io.EOF
			}
		}
	}
	n, err := s.br.Read(p[:min(int64(len(p)), s.left)])
	s.left -= int64(n)
	return n, unexpected(err)
}

func (s *StreamConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := s.writeFrame(OpBinary, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeFrame sends p as one frame of op, header and payload in one write.
func (s *StreamConn) writeFrame(op Opcode, p []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var key [4]byte
	if !s.unmasked {
		if _, err := rand.Read(key[:]); err != nil {
			return err
		}
	}
	s.wbuf = appendFrame(s.wbuf[:0], op, p, !s.unmasked, key)
	_, err := s.Conn.Write(s.wbuf)
	if cap(s.wbuf) > relayLarge {
		s.wbuf = nil // a large write's buffer is not kept while idle
	}
	return err
}
