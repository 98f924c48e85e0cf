package bulkconn

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// TLSConn is the client side of a TLS connection over a Conn whose every
// Write is gathered: the records of one write (a NATS flush of megabytes)
// go out in writes of up to GatherMax, not one syscall per 16 KiB.
//
// A WebSocket client writes a frame's header and its payload with two
// writes (nats.go does). A write that is exactly one client frame header
// announcing a payload, where a frame starts, is held and goes out with
// the next write, in the same gather: a reply costs one syscall, not two.
// Writes are followed through the frames they carry (the payload a header
// announced is not taken for a header). Should the next write not come
// within holdMax (a writer that framed differently), the header goes out
// alone.
type TLSConn struct {
	*tls.Conn
	raw *Conn

	mu      sync.Mutex // orders writes with the held header
	payload uint64     // bytes of the current frame's payload still to come
	held    []byte     // a frame header waiting for its payload
	hbuf    [maxFrameHeader]byte
	timer   *time.Timer // sends held alone after holdMax
	err     error       // the failed write of a held header
}

// holdMax bounds how long a frame header waits for its payload.
const holdMax = time.Millisecond

// Client runs the TLS handshake of config over raw (TCP, or a proxy's
// tunnel) and returns the connection, its writes gathered.
func Client(ctx context.Context, raw net.Conn, config *tls.Config) (*TLSConn, error) {
	b := New(raw)
	tc := tls.Client(b, config)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return &TLSConn{Conn: tc, raw: b}, nil
}

func (c *TLSConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if c.payload == 0 && len(c.held) == 0 {
		if n, ok := frameHeader(p); ok {
			c.held, c.payload = append(c.hbuf[:0], p...), n
			if c.timer == nil {
				c.timer = time.AfterFunc(holdMax, c.sendHeld)
			} else {
				c.timer.Reset(holdMax)
			}
			return len(p), nil
		}
	}
	c.payload -= min(c.payload, uint64(len(p)))
	done := c.raw.Gather()
	if len(c.held) > 0 {
		c.timer.Stop()
		_, err := c.Conn.Write(c.held)
		c.held = c.held[:0]
		if err != nil {
			done()
			c.err = err
			return 0, err
		}
	}
	n, err := c.Conn.Write(p)
	if ferr := done(); err == nil {
		err = ferr
	}
	return n, err
}

// sendHeld writes a header whose payload did not follow within holdMax.
func (c *TLSConn) sendHeld() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.held) == 0 || c.err != nil {
		return
	}
	if _, err := c.Conn.Write(c.held); err != nil {
		c.err = err
	}
	c.held = c.held[:0]
}

// Close stops the hold timer and closes the connection.
func (c *TLSConn) Close() error {
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	return c.Conn.Close()
}

// maxFrameHeader is the largest WebSocket frame header: 2 bytes, an 8-byte
// length, a 4-byte mask key.
const maxFrameHeader = 14

// frameHeader reports whether p is exactly the header of a masked
// (client) WebSocket frame whose payload is not empty (RFC 6455, 5.2), and
// the payload's length.
func frameHeader(p []byte) (uint64, bool) {
	if len(p) < 6 || len(p) > maxFrameHeader || p[1]&0x80 == 0 {
		return 0, false
	}
	n, size := uint64(p[1]&0x7f), 6
	switch n {
	case 126:
		size = 8
		if len(p) >= 4 {
			n = uint64(p[2])<<8 | uint64(p[3])
		}
	case 127:
		size = 14
		if len(p) >= 10 {
			n = 0
			for _, b := range p[2:10] {
				n = n<<8 | uint64(b)
			}
		}
	}
	return n, len(p) == size && n > 0
}

// Dialer dials TLS connections whose writes are gathered (TLSConn) for a
// WebSocket client that leaves TLS to its dialer (nats.go's CustomDialer
// with SkipTLSHandshake). Inner dials the TCP connection or tunnel.
type Dialer struct {
	Inner interface {
		Dial(network, address string) (net.Conn, error)
	}
	// Config is the TLS configuration; its ServerName defaults to the
	// dialed host.
	Config *tls.Config
	// Timeout bounds the handshake.
	Timeout time.Duration
}

// Dial dials address through Inner and runs the handshake.
func (d *Dialer) Dial(network, address string) (net.Conn, error) {
	raw, err := d.Inner.Dial(network, address)
	if err != nil {
		return nil, err
	}
	cfg := d.Config.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			host = address
		}
		cfg.ServerName = host
	}
	ctx := context.Background()
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	return Client(ctx, raw, cfg)
}

// SkipTLSHandshake tells nats.go that the connections Dial returns are
// TLS already.
func (d *Dialer) SkipTLSHandshake() bool { return true }
