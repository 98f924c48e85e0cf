package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/bulkconn"
	"github.com/outposthq/outpost/internal/websocket"
)

// runPortForward is `outpost port-forward [ADDR:]LOCAL:REMOTE`, like
// `ssh -L`: it listens on ADDR:LOCAL (127.0.0.1 by default; LOCAL 0 picks
// a port) and carries each connection to port REMOTE of the target's
// machine, as its own stream ({target}/ports/{port}/tcp), several at once,
// until interrupted.
func runPortForward(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return ownFailure("port-forward", stderr, portForwardCommand(ctx, args, stdout, stderr))
}

func portForwardCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("port-forward", "[--agent A | --session S] [ADDR:]LOCAL:REMOTE", stderr)
	tc := addTargetCommand(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("want one [ADDR:]LOCAL:REMOTE, got %d arguments", fs.NArg())
	}
	local, remote, err := parseForward(fs.Arg(0))
	if err != nil {
		return err
	}
	t, err := tc.target(ctx)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", local)
	if err != nil {
		return err
	}
	hc := bulkStreams(t.Client().HTTPClient())
	fmt.Fprintf(stdout, "Forwarding from %s to port %d of the target\n", ln.Addr(), remote)
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := forwardConn(ctx, t, hc, remote, c); err != nil {
				fmt.Fprintf(stderr, "outpost port-forward: %s: %v\n", c.RemoteAddr(), err)
			}
		}()
	}
}

// parseForward splits [ADDR:]LOCAL:REMOTE into the local address to
// listen on and the remote port.
func parseForward(spec string) (local string, remote int, err error) {
	i := strings.LastIndexByte(spec, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("%q: want [ADDR:]LOCAL:REMOTE", spec)
	}
	remote, err = strconv.Atoi(spec[i+1:])
	if err != nil || remote < 1 || remote > 65535 {
		return "", 0, fmt.Errorf("%q: remote port %q is not 1-65535", spec, spec[i+1:])
	}
	rest := spec[:i]
	addr, lport := "127.0.0.1", rest
	if j := strings.LastIndexByte(rest, ':'); j >= 0 {
		addr, lport = strings.TrimSuffix(strings.TrimPrefix(rest[:j], "["), "]"), rest[j+1:]
	}
	p, err := strconv.Atoi(lport)
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("%q: local port %q is not 0-65535", spec, lport)
	}
	if addr == "" || addr == "localhost" {
		addr = "127.0.0.1"
	}
	return net.JoinHostPort(addr, strconv.Itoa(p)), remote, nil
}

// bulkStreams is hc for the streams' WebSockets, their TLS over a bulk
// connection (internal/bulkconn): crypto/tls reads one 16 KiB record a
// syscall and writes one a syscall, a bulk connection many. Proxied
// connections, and a client whose transport is not an *http.Transport,
// are as hc makes them.
func bulkStreams(hc *http.Client) *http.Client {
	base, ok := hc.Transport.(*http.Transport)
	if hc.Transport == nil {
		base, ok = http.DefaultTransport.(*http.Transport)
	}
	if !ok {
		return hc
	}
	t := base.Clone()
	cfg := t.TLSClientConfig
	if cfg == nil {
		cfg = &tls.Config{}
	}
	var d net.Dialer
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			c.ServerName = host
		}
		c.NextProtos = []string{"http/1.1"} // the upgrade is HTTP/1.1's
		tc, err := bulkconn.Client(ctx, raw, c)
		if err != nil {
			return nil, err
		}
		return tc, nil
	}
	out := *hc
	out.Transport = t
	return &out
}

// forwardConn carries c to port of t's machine over a WebSocket of hc;
// it closes c.
func forwardConn(ctx context.Context, t *client.Target, hc *http.Client, port int, c net.Conn) error {
	cl := t.Client()
	ws, resp, err := websocket.Dial(ctx, hc, t.PortStreamURL(port), cl.AuthHeader())
	if err != nil {
		c.Close()
		if errors.Is(err, websocket.ErrNotUpgraded) && resp != nil {
			defer resp.Body.Close()
			var body client.ErrorBody
			if json.NewDecoder(resp.Body).Decode(&body) == nil && body.Error != nil {
				return body.Error.Err()
			}
			return fmt.Errorf("%s", resp.Status)
		}
		return err
	}
	ws.MaxMessage = websocket.StreamChunk * 4
	err = websocket.Splice(ws, c)
	var ce *websocket.CloseError
	if errors.As(err, &ce) && ce.Code != websocket.CloseNormal {
		return fmt.Errorf("the connection was reset: %s", ce.Reason)
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
