package agent

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// watchLinks makes nc follow the machine through sleep and network
// changes until the returned stop is called:
//
//   - after a wake (the clocks jumped) it reconnects at once: the server
//     has most likely dropped the old connection, and the client would
//     otherwise trust it until a ping goes unanswered (5–10 s);
//   - while disconnected, any change (a link or an address back) ends the
//     backoff wait and tries at once;
//   - connected, it reconnects at once when the connection's own address
//     went away (a cable pulled, another Wi-Fi network) or when traffic to
//     the server would now leave from another address (a VPN came up, a
//     better link appeared): the connection's path is gone. Changes that
//     leave the path as it was (a container network, a second interface)
//     leave the connection alone, and the requests in flight on it.
//
// A change of routes alone forces a reconnect at most once every
// routeReconnectEvery (see there); one wanted sooner is looked at again when
// that time is up.
//
// The changes are handled on a goroutine of the agent's own, so that a
// connection stuck in a write (nats.go holds its lock for up to its
// flusher timeout) never holds up the watcher; Run waits for it after it
// closed nc.
func (a *Agent) watchLinks(nc *nats.Conn) (stop func()) {
	var (
		mu      sync.Mutex
		pending *linkEvent
	)
	wake, quit := make(chan struct{}, 1), make(chan struct{})
	hub := a.links
	a.linkWG.Add(1)
	go func() {
		defer a.linkWG.Done()
		limit := routeLimit{every: hub.routeEvery}
		putOff := time.NewTimer(time.Hour)
		putOff.Stop()
		defer putOff.Stop()
		waiting := false // putOff is set
		for {
			var ev linkEvent
			select {
			case <-quit:
				return
			case <-wake:
				mu.Lock()
				p := pending
				pending = nil
				mu.Unlock()
				if p == nil {
					continue
				}
				ev = *p
			case <-putOff.C:
				waiting = false
				ev = linkEvent{Routes: true}
			}
			if ev.RoutesOnly() {
				if wait := limit.wait(time.Now()); wait > 0 {
					if !waiting {
						putOff.Reset(wait)
						waiting = true
					}
					continue
				}
			}
			if a.followLinks(nc, ev) && ev.RoutesOnly() {
				limit.forced(time.Now())
			}
		}
	}()
	unsubscribe := hub.subscribe(func(ev linkEvent) {
		mu.Lock()
		if pending != nil {
			ev = pending.merge(ev)
		}
		pending = &ev
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	return func() {
		unsubscribe()
		close(quit)
	}
}

// routeLimit spaces the reconnects changes of routes alone force.
type routeLimit struct {
	every time.Duration
	last  time.Time // the last such reconnect; zero: none yet
}

// wait is how long until a route change may force a reconnect again (0:
// now).
func (l *routeLimit) wait(now time.Time) time.Duration {
	if l.last.IsZero() {
		return 0
	}
	return max(0, l.last.Add(l.every).Sub(now))
}

// forced records a reconnect a route change forced at now.
func (l *routeLimit) forced(now time.Time) { l.last = now }

// merge is what e and then later together say.
func (e linkEvent) merge(later linkEvent) linkEvent {
	e.Slept = max(e.Slept, later.Slept)
	e.Removed = append(e.Removed, later.Removed...)
	e.Added = append(e.Added, later.Added...)
	e.Routes = e.Routes || later.Routes
	return e
}

// followLinks reconnects nc when ev calls for it (see watchLinks), and
// says whether it did.
func (a *Agent) followLinks(nc *nats.Conn, ev linkEvent) bool {
	switch {
	case ev.Slept > 0:
		a.log.Info("the clock jumped (the machine slept?): reconnecting now", "by", ev.Slept.Round(time.Millisecond))
	case !nc.IsConnected():
		a.log.Info("network changed while disconnected: reconnecting now", "removed", ev.Removed, "added", ev.Added, "routes", ev.RoutesOnly())
	default:
		why := a.links.pathGone(nc, ev)
		if why == "" {
			return false
		}
		a.log.Info("network changed: reconnecting now", "why", why, "removed", ev.Removed, "added", ev.Added, "routes", ev.RoutesOnly())
	}
	a.forceReconnect(nc)
	return true
}

func (a *Agent) forceReconnect(nc *nats.Conn) {
	if err := nc.ForceReconnect(); err != nil && !nc.IsClosed() {
		a.log.Warn("force reconnect", "err", err)
	}
}

// pathGone says why nc's connection can no longer be working after the
// change ev, or "" when its path looks unchanged.
func pathGone(nc *nats.Conn, ev linkEvent) string {
	local, err := netip.ParseAddrPort(nc.LocalAddr())
	if err != nil {
		return "" // not connected any more, or not over IP: nothing to judge
	}
	remote := nc.ConnectedAddr()
	lip := local.Addr().Unmap().WithZone("")
	for _, r := range ev.Removed {
		_, ip, _ := strings.Cut(r, " ")
		if a, err := netip.ParseAddr(ip); err == nil && a.Unmap().WithZone("") == lip {
			return "the connection's address " + ip + " went away"
		}
	}
	src, err := routeSource(remote)
	if err != nil {
		return fmt.Sprintf("no route to %s any more: %v", remote, err)
	}
	if src != lip {
		return fmt.Sprintf("traffic to %s now leaves from %s, not %s", remote, src, lip)
	}
	return ""
}

// routeSource is the address the machine would send from to reach addr
// now. It asks the kernel for the route (a UDP socket's connect): no
// packet is sent.
func routeSource(addr string) (netip.Addr, error) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return netip.Addr{}, err
	}
	defer c.Close()
	ap, err := netip.ParseAddrPort(c.LocalAddr().String())
	if err != nil {
		return netip.Addr{}, err
	}
	return ap.Addr().Unmap().WithZone(""), nil
}

// connectTimeout bounds one connection attempt: from the dial through the
// TLS and WebSocket handshakes (connectDeadline), and then the connect
// exchange (nats.go's Timeout, 2 s by default). 2 s was too short for a
// fleet reconnecting at once over wss://: attempts queued at a busy server
// timed out and were made again, so the work grew; 2,000 agents took
// 87-115 s to be online after a control-plane restart on a loaded machine,
// 15.7 s with 10 s (BENCHMARKS.md). A dead path is still left at once
// when the link watcher sees the network change.
const connectTimeout = 10 * time.Second

// connectDeadline is the option that puts a deadline on every connection
// the agent dials, until nats.go replaces it with its own. nats.go sets
// that one only after the TLS handshake of a wss:// connection: a server
// or a middlebox that accepts TCP and never completes TLS held the attempt,
// and with it the agent's reconnect loop, forever. It wraps the dialer
// NATSProxy set, if any: it goes after it.
func connectDeadline(timeout time.Duration) nats.Option {
	return func(o *nats.Options) error {
		inner := o.CustomDialer
		if inner == nil {
			d := net.Dialer{Timeout: o.Timeout}
			if o.Dialer != nil {
				d = *o.Dialer
			}
			inner = &d
		}
		o.CustomDialer = deadlineDialer{inner: inner, timeout: timeout}
		return nil
	}
}

// deadlineDialer dials with inner and sets a deadline on the connection.
type deadlineDialer struct {
	inner   nats.CustomDialer
	timeout time.Duration
}

// Dial dials address; the connection must be done with its handshakes
// within the timeout.
func (d deadlineDialer) Dial(network, address string) (net.Conn, error) {
	c, err := d.inner.Dial(network, address)
	if err != nil {
		return nil, err
	}
	if err := c.SetDeadline(time.Now().Add(d.timeout)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// SkipTLSHandshake passes on the inner dialer's answer (nats.go asks).
func (d deadlineDialer) SkipTLSHandshake() bool {
	s, ok := d.inner.(interface{ SkipTLSHandshake() bool })
	return ok && s.SkipTLSHandshake()
}
