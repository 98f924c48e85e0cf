package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/internal/bulkconn"
	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// The claim's timing (variables: tests shorten them). probeTimeout bounds
// one probe; claimTimeout how long a takeover waits for the old daemon,
// and how long a subscriber that does not answer is asked again before
// the daemon says so; claimRetryMax the pause between asks after that.
var (
	probeTimeout  = 2 * time.Second
	claimTimeout  = 15 * time.Second
	claimRetryMax = 10 * time.Second
)

// newBackoff is the jittered exponential backoff between connection attempts.
func newBackoff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 100 * time.Millisecond
	b.MaxInterval = 5 * time.Second
	b.RandomizationFactor = 0.5
	b.MaxElapsedTime = 0 // forever
	b.Reset()
	return b
}

// connect dials NATS until it succeeds, ctx ends, or the credentials are
// refused (revoked or never valid: retrying cannot help).
func (a *Agent) connect(ctx context.Context) (*nats.Conn, error) {
	inbox, err := a.id.Inbox()
	if err != nil {
		return nil, err
	}
	reconnect := newBackoff()
	opts := append(a.cfg.Identity.NATSOptions(),
		nats.Name("outpost-agent "+a.id.String()),
		nats.CustomInboxPrefix(inbox),
		nats.MaxReconnects(-1),
		nats.Timeout(connectTimeout),
		nats.PingInterval(wire.PingInterval),
		nats.MaxPingsOutstanding(wire.MaxPingsOut),
		nats.CustomReconnectDelay(func(attempts int) time.Duration {
			if attempts <= 1 {
				reconnect.Reset()
			}
			return reconnect.NextBackOff()
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			a.log.Warn("disconnected from NATS", "err", err)
			a.noteErr("disconnected", err)
			a.pipes.resetAll("the agent's connection to NATS dropped")
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			a.log.Info("reconnected to NATS", "url", nc.ConnectedUrlRedacted())
			a.publishHello(nc)
			select {
			case a.connected <- struct{}{}:
			default:
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if isAuthError(err) {
				a.fatal(fmt.Errorf("agent: NATS refused the credentials (revoked? re-enroll with 'outpost agent enroll'): %w", err))
				return
			}
			a.log.Warn("NATS error", "err", err)
			a.noteErr("nats", err)
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			if err := nc.LastError(); err != nil {
				a.fatal(fmt.Errorf("agent: NATS connection closed: %w", err))
			}
		}),
	)
	opts = append(opts, NATSProxy(nil, a.cfg.Identity.NATSURLs)) // HTTPS_PROXY, NO_PROXY
	opts = append(opts, a.cfg.NATSOptions...)
	opts = append(opts, bulkWSS())
	opts = append(opts, connectDeadline(connectTimeout)) // after every dialer
	servers := a.cfg.Identity.NATSServers()
	b := newBackoff()
	for {
		nc, err := nats.Connect(servers, opts...)
		if err == nil {
			return nc, nil
		}
		if isAuthError(err) {
			return nil, fmt.Errorf("agent: NATS refused the credentials (revoked? re-enroll with 'outpost agent enroll'): %w", err)
		}
		wait := b.NextBackOff()
		a.log.Warn("cannot reach NATS, retrying", "servers", servers, "in", wait.Round(time.Millisecond), "err", err)
		a.noteErr("cannot reach NATS", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// bulkWSS is the option that runs wss:// connections in the dialer:
// TLS over a bulkconn (a flush of megabytes goes out in writes of 256 KiB,
// and reads take many records a syscall, instead of a syscall per 16 KiB
// record each way), and the WebSocket too (wsStreamDialer), so that
// nats.go speaks plain NATS over it. It wraps the dialer the other options
// chose (a proxy's tunnel, or TCP) and takes their TLS configuration; it
// changes nothing unless every server is wss://.
//
// nats.go's own WebSocket client masks every byte it sends, one at a
// time: the largest cost of an upload left (16% of the CPU of a
// port-forward over TLS). The control plane agrees to unmasked frames
// inside its TLS (websocket.UnmaskedHeader); a server that does not gets
// masked ones. nats.go (v1.55) also leaves a connection without its writer
// when a dialer says it did the TLS itself, which this avoids as well.
func bulkWSS() nats.Option {
	return func(o *nats.Options) error {
		if len(o.Servers) == 0 || o.TLSCertCB != nil || o.RootCAsCB != nil || o.TLSHandshakeFirst {
			return nil
		}
		urls := make([]*url.URL, len(o.Servers))
		stream := true // every server is a control plane's NATS port
		for i, s := range o.Servers {
			u, err := url.Parse(s)
			if err != nil || u.Scheme != "wss" {
				return nil
			}
			urls[i], stream = u, stream && u.Path == wire.NATSPath
		}
		servers := make([]string, len(urls))
		var paths map[string]string
		for i, u := range urls {
			if !stream {
				// A cluster's own WebSocket listener, which may ask
				// for TLS in its INFO: nats.go speaks WebSocket itself,
				// as ws:// with its TLS off, over this dialer's TLS.
				u.Scheme = "ws"
				servers[i] = u.String()
				continue
			}
			hostport := u.Host
			if u.Port() == "" {
				hostport = net.JoinHostPort(u.Hostname(), "443")
			}
			if paths == nil {
				paths = map[string]string{}
			}
			paths[hostport] = u.RequestURI()
			servers[i] = (&url.URL{Scheme: "nats", Host: hostport, User: u.User}).String()
		}
		var inner nats.CustomDialer = o.CustomDialer
		if inner == nil {
			d := &net.Dialer{Timeout: o.Timeout}
			if o.Dialer != nil {
				d = o.Dialer
			}
			inner = d
		}
		cfg := o.TLSConfig
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tlsDialer := &bulkconn.Dialer{Inner: inner, Config: cfg, Timeout: o.Timeout}
		o.CustomDialer = tlsDialer
		if paths != nil {
			o.CustomDialer = &wsStreamDialer{tls: tlsDialer, paths: paths, timeout: o.Timeout}
		}
		o.Servers, o.Secure, o.TLSConfig = servers, false, nil
		// The dialer is given the URL's host, not its addresses: TLS
		// verifies the name.
		o.SkipHostLookup = true
		return nil
	}
}

// wsStreamDialer dials a server of bulkWSS: TLS, then the WebSocket
// handshake on the server's path, and hands nats.go the byte stream.
type wsStreamDialer struct {
	tls     *bulkconn.Dialer
	paths   map[string]string // host:port → path (and query) of its wss:// URL
	timeout time.Duration     // bounds the WebSocket handshake
}

// Dial dials address (host:port of a wss:// server).
func (d *wsStreamDialer) Dial(network, address string) (net.Conn, error) {
	path, ok := d.paths[address]
	if !ok {
		return nil, fmt.Errorf("agent: %s is none of the wss:// servers", address)
	}
	c, err := d.tls.Dial(network, address)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if d.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.timeout)
		defer cancel()
	}
	host := address
	if h, port, err := net.SplitHostPort(address); err == nil && port == "443" {
		host = h
	}
	return websocket.DialStream(ctx, c, host, path, nil)
}

func isAuthError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAuthExpired) {
		return true
	}
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "authorization violation") || strings.Contains(s, "authentication revoked") ||
		strings.Contains(s, "authentication expired")
}

// fatal asks Run to stop with err (the first reason wins).
func (a *Agent) fatal(err error) {
	select {
	case a.stopCh <- err:
	default:
	}
}

// claim makes sure no other live daemon serves the identity: a probe on the
// rpc subject must find no responders. With Takeover the live daemon is
// asked to stop and claim waits for it to be gone.
//
// A subscriber that does not answer is a frozen daemon or a server too
// busy to tell us there is nobody (thousands of agents connecting at
// once): claim neither serves beside it nor gives up, it asks again (with
// a warning once claimTimeout has passed) until the subscriber answers or
// goes, or ctx ends. A daemon that exited here would stay down on a
// machine that restarts nothing (issue 20: 159 of 10,000 agents exited
// during a connect storm).
func (a *Agent) claim(ctx context.Context, nc *nats.Conn) error {
	start := time.Now()
	pause := probeTimeout
	for {
		other, err := a.probe(ctx, nc)
		if err != nil {
			return err
		}
		if other == nil {
			return nil
		}
		if other.Instance == notAnswering && !a.cfg.Takeover {
			if waited := time.Since(start); waited > claimTimeout {
				a.log.Warn("something subscribed to this identity does not answer (a frozen daemon, or a server too busy); not serving beside it, asking again: stop the other daemon or run with --takeover",
					"waited", waited.Round(time.Second))
				if err := sleepCtx(ctx, pause); err != nil {
					return err
				}
				pause = min(2*pause, claimRetryMax)
			}
			continue
		}
		if !a.cfg.Takeover {
			return fmt.Errorf("%w: instance %s (pid %d on %s); stop it or run with --takeover",
				ErrAlreadyServed, other.Instance, other.PID, other.Hostname)
		}
		if time.Since(start) > claimTimeout {
			return fmt.Errorf("%w: instance %s did not stop", ErrAlreadyServed, other.Instance)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// notAnswering is the instance probe reports for a subscriber that did not
// answer in time.
const notAnswering = "(not answering)"

// probe asks whoever serves the rpc subject who they are; nil means nobody.
// A subscriber that does not answer (a frozen daemon) counts as live.
func (a *Agent) probe(ctx context.Context, nc *nats.Conn) (*wire.ProbeResult, error) {
	subj, err := a.id.RPC()
	if err != nil {
		return nil, err
	}
	req, err := wire.NewRequest(wire.OpProbe, &wire.ProbeRequest{Instance: a.instance, Takeover: a.cfg.Takeover}, time.Now().Add(probeTimeout))
	if err != nil {
		return nil, err
	}
	data, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	msg, err := nc.RequestWithContext(pctx, subj, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return &wire.ProbeResult{Instance: notAnswering}, nil
	case err != nil:
		return nil, fmt.Errorf("agent: probe: %w", err)
	}
	resp, err := wire.DecodeResponse(msg.Data)
	if err != nil {
		return nil, err
	}
	var res wire.ProbeResult
	if err := resp.Into(&res); err != nil {
		return nil, fmt.Errorf("agent: probe answered: %w", err)
	}
	return &res, nil
}

// publishHello says hello; called on connect and every reconnect.
func (a *Agent) publishHello(nc *nats.Conn) {
	h := a.Hello()
	h.Conn = connRef(nc)
	a.publish(nc, subjects.KindHello, h)
}

// connRef names nc's current connection for presence (wire.ConnRef); nil
// when the server gave no client id.
func connRef(nc *nats.Conn) *wire.ConnRef {
	cid, err := nc.GetClientID()
	srv := nc.ConnectedServerId()
	if err != nil || srv == "" {
		return nil
	}
	return &wire.ConnRef{Server: srv, ID: cid}
}

func (a *Agent) publish(nc *nats.Conn, kind string, v any) {
	subj, err := a.id.Subject(kind)
	if err != nil {
		a.log.Error("presence subject", "err", err)
		return
	}
	b, err := wire.Marshal(v)
	if err != nil {
		a.log.Error("encode "+kind, "err", err)
		return
	}
	if err := nc.Publish(subj, b); err != nil {
		a.log.Warn("publish "+kind, "err", err)
	}
}

// firstBeat is how soon after a (re)connect the agent heartbeats: a hello
// the control plane missed (it was restarting, its subscription not yet
// made, as when a fleet reconnects at once) is made good in seconds, not a
// whole heartbeat interval.
const firstBeat = 2 * time.Second

// heartbeat publishes heartbeats until stop is closed: every interval, and
// firstBeat after every connect.
func (a *Agent) heartbeat(nc *nats.Conn, stop <-chan struct{}) {
	t := time.NewTicker(a.cfg.HeartbeatInterval)
	defer t.Stop()
	soon := time.NewTimer(min(firstBeat, a.cfg.HeartbeatInterval))
	defer soon.Stop()
	var seq uint64
	for {
		select {
		case <-stop:
			return
		case <-a.connected:
			soon.Reset(min(firstBeat, a.cfg.HeartbeatInterval))
			continue
		case <-soon.C:
		case <-t.C:
		case <-a.beat:
		}
		if !nc.IsConnected() {
			continue // a stale beat flushed on reconnect would say nothing true
		}
		seq++
		a.publish(nc, subjects.KindHeartbeat, &wire.Heartbeat{
			Instance:   a.instance,
			Seq:        seq,
			Time:       time.Now().UTC(),
			IntervalMs: a.cfg.HeartbeatInterval.Milliseconds(),
			Conn:       connRef(nc),
			Paused:     a.paused.Load(),
		})
	}
}
