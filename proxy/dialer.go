package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// DefaultTimeout bounds a Dial whose context has no deadline: the connection
// to the proxy (or the destination) and the proxy's answer to CONNECT.
const DefaultTimeout = 30 * time.Second

// Dialer opens TCP connections, through the HTTP proxy its Proxy picks for
// the destination (a tunnel made with CONNECT), or directly when it picks
// none. The zero Dialer uses the environment. What the caller sends on the
// connection, TLS included, goes end to end through the tunnel: the proxy
// sees only the destination's host and port.
type Dialer struct {
	// Proxy picks the proxy for each destination, called with a request
	// for Scheme://host:port. Nil means FromEnvironment.
	Proxy Func
	// Scheme is the scheme Proxy is asked about, and so the variable that
	// picks the proxy from the environment: "https" (HTTPS_PROXY) when
	// empty, "http" for HTTP_PROXY.
	Scheme string
	// Timeout bounds a Dial whose context has no deadline. Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// Forward makes the TCP connections, to the proxy or the destination.
	// Nil means a net.Dialer.
	Forward interface {
		DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	}
	// TLSConfig is used for a proxy whose URL is https://, with ServerName
	// set to the proxy's host when empty. Nil means the system's roots.
	TLSConfig *tls.Config
}

// Dial is DialContext without a context; it makes a Dialer a nats.go
// CustomDialer.
func (d *Dialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

// DialContext connects to addr (host:port) over network ("tcp", "tcp4" or
// "tcp6"), through the proxy Proxy picks for it. A proxy's refusal is a
// *RefusedError with the proxy's status; every error names the proxy.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("proxy: dial %s %s: only tcp", network, addr)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.timeout())
		defer cancel()
	}
	proxyURL, err := d.pick(addr)
	if err != nil {
		return nil, err
	}
	if proxyURL == nil {
		return d.forward().DialContext(ctx, network, addr)
	}
	return d.tunnel(ctx, proxyURL, addr)
}

// ProxyFor returns the proxy a Dial to addr would use, or nil for none.
func (d *Dialer) ProxyFor(addr string) (*url.URL, error) { return d.pick(addr) }

func (d *Dialer) pick(addr string) (*url.URL, error) {
	scheme := d.Scheme
	if scheme == "" {
		scheme = "https"
	}
	target := &url.URL{Scheme: scheme, Host: addr}
	f := d.Proxy
	if f == nil {
		f = FromEnvironment
	}
	u, err := f(&http.Request{Method: http.MethodConnect, URL: target, Host: addr, Header: http.Header{}})
	if err != nil {
		return nil, fmt.Errorf("proxy: choose a proxy for %s: %w", addr, err)
	}
	if u == nil {
		return nil, nil
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("proxy: %s: scheme %q is not supported (want http or https)", u.Redacted(), u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("proxy: %s: no host", u.Redacted())
	}
	return u, nil
}

func (d *Dialer) timeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return DefaultTimeout
}

func (d *Dialer) forward() interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
} {
	if d.Forward != nil {
		return d.Forward
	}
	return &net.Dialer{KeepAlive: 30 * time.Second}
}

// tunnel connects to proxyURL and asks it with CONNECT for a tunnel to
// target. ctx bounds it all; the connection is closed on every failure.
func (d *Dialer) tunnel(ctx context.Context, proxyURL *url.URL, target string) (net.Conn, error) {
	via := proxyURL.Redacted()
	req, err := connectRequest(proxyURL, target)
	if err != nil {
		return nil, fmt.Errorf("proxy: CONNECT via %s: %w", via, err)
	}
	port := proxyURL.Port()
	if port == "" {
		port = defaultPort(proxyURL.Scheme)
	}
	conn, err := d.forward().DialContext(ctx, "tcp", net.JoinHostPort(proxyURL.Hostname(), port))
	if err != nil {
		return nil, fmt.Errorf("proxy: connect to proxy %s: %w", via, err)
	}
	if proxyURL.Scheme == "https" {
		cfg := &tls.Config{}
		if d.TLSConfig != nil {
			cfg = d.TLSConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = proxyURL.Hostname()
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("proxy: TLS with proxy %s: %w", via, err)
		}
		conn = tc
	}
	// The exchange obeys ctx: when ctx ends (deadline or cancel), the
	// connection's deadline passes, which ends a read or write at once.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	pending, err := exchange(conn, req, proxyURL, target)
	if !stop() { // ctx ended: whatever happened, the deadline is spoilt
		conn.Close()
		return nil, fmt.Errorf("proxy: CONNECT to %s via %s: %w", target, via, context.Cause(ctx))
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("proxy: CONNECT to %s via %s: %w", target, via, err)
	}
	if len(pending) > 0 {
		return &tunnelConn{Conn: conn, pending: pending}, nil
	}
	return conn, nil
}

// exchange sends req and reads the proxy's answer. It returns what the
// destination sent right behind the answer (a NATS server speaks first).
func exchange(conn net.Conn, req []byte, proxyURL *url.URL, target string) ([]byte, error) {
	via := proxyURL.Redacted()
	if _, err := conn.Write(req); err != nil {
		return nil, fmt.Errorf("proxy: CONNECT to %s via %s: %w", target, via, err)
	}
	br := bufio.NewReaderSize(conn, maxLine)
	code, status, err := readConnectResponse(br)
	if err != nil {
		if errors.Is(err, errMalformed) {
			return nil, fmt.Errorf("proxy: %s answered CONNECT to %s: %w", via, target, err)
		}
		return nil, fmt.Errorf("proxy: CONNECT to %s via %s: no answer: %w", target, via, err)
	}
	if code/100 != 2 {
		return nil, &RefusedError{Proxy: via, Target: target, StatusCode: code, Status: status}
	}
	var pending []byte
	if n := br.Buffered(); n > 0 {
		pending = make([]byte, n)
		_, _ = br.Read(pending)
	}
	return pending, nil
}

// tunnelConn is a tunnel whose first bytes were read with the proxy's answer.
type tunnelConn struct {
	net.Conn
	pending []byte
}

func (c *tunnelConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
