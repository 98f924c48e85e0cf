package agent

import (
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/proxy"
)

// natsProxyTimeout bounds one dial through a proxy: the connection to it,
// and its answer to CONNECT (the proxy connects to the server meanwhile).
const natsProxyTimeout = 10 * time.Second

// NATSProxy is the option that sends the agent's NATS connections to servers
// through the HTTP proxy pick chooses for them, in a tunnel made with
// CONNECT. A nil pick means proxy.FromEnvironment: HTTPS_PROXY and NO_PROXY
// (HTTP_PROXY when every server is ws://), as net/http reads them, which
// never proxies loopback. TLS and WebSocket (tls://, wss://) run end to end
// inside the tunnel, and the proxy, not the agent, resolves the server's
// name.
//
// When pick chooses no proxy for any of servers, the option changes
// nothing: nats.go dials as it always does.
func NATSProxy(pick proxy.Func, servers []string) nats.Option {
	d := &proxy.Dialer{Proxy: pick, Scheme: proxyScheme(servers), Timeout: natsProxyTimeout}
	return func(o *nats.Options) error {
		for _, s := range servers {
			addr, err := natsHostPort(s)
			if err != nil {
				return err
			}
			u, err := d.ProxyFor(addr)
			if err != nil {
				return fmt.Errorf("agent: %w", err)
			}
			if u != nil {
				o.CustomDialer = d
				o.SkipHostLookup = true
				return nil
			}
		}
		return nil
	}
}

// proxyScheme is the scheme a proxy is chosen for: "http" when every server
// is plain WebSocket (ws://), else "https": a CONNECT tunnel, as for TLS.
func proxyScheme(servers []string) string {
	if len(servers) == 0 {
		return "https"
	}
	for _, s := range servers {
		if u, err := url.Parse(s); err != nil || u.Scheme != "ws" {
			return "https"
		}
	}
	return "http"
}

// natsHostPort is the host:port nats.go dials for a server URL, with its
// default ports.
func natsHostPort(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("agent: bad NATS server URL %q", s)
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	port := "4222"
	switch u.Scheme {
	case "ws":
		port = "80"
	case "wss":
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}
