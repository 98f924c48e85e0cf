// Package proxy connects through HTTP forward proxies: which proxy to use
// for a destination (Func: the environment's HTTPS_PROXY, HTTP_PROXY and
// NO_PROXY by default), and a Dialer that opens a TCP tunnel to the
// destination with HTTP CONNECT, for connections net/http does not make
// itself, such as the agent's NATS connection.
//
// HTTP clients need none of this: a transport with Proxy set (as
// http.DefaultTransport has, and its Clone keeps) speaks to the proxy itself.
//
// Production uses the environment, read once per process, as net/http reads
// it; that never proxies localhost or loopback addresses. Fixed names a proxy
// explicitly and proxies loopback too, which is what tests on one machine
// need.
package proxy

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Func picks the proxy for a request: the proxy's URL, or nil to connect
// directly. It has the type of http.Transport's Proxy field. Only the
// request's URL is consulted by the Funcs of this package.
type Func = func(*http.Request) (*url.URL, error)

// FromEnvironment is http.ProxyFromEnvironment: HTTPS_PROXY for https URLs,
// HTTP_PROXY for http ones (or their lower-case forms), except for hosts
// NO_PROXY names; localhost and loopback addresses are never proxied. The
// environment is read once, on first use.
func FromEnvironment(req *http.Request) (*url.URL, error) {
	return http.ProxyFromEnvironment(req)
}

// Fixed returns a Func that sends every request through proxyURL except
// those to the hosts noProxy names. noProxy has NO_PROXY's syntax, as net/http
// reads it: comma-separated entries, each "*" (everything), an IP address, a
// CIDR range, or a domain name ("example.com" is it and its subdomains,
// ".example.com" or "*.example.com" its subdomains only), with an optional
// ":port". Unlike FromEnvironment, localhost and loopback addresses are
// proxied unless noProxy names them.
func Fixed(proxyURL *url.URL, noProxy string) Func {
	m := parseNoProxy(noProxy)
	return func(req *http.Request) (*url.URL, error) {
		if req == nil || req.URL == nil || m.match(req.URL) {
			return nil, nil
		}
		return proxyURL, nil
	}
}

// noProxy is a parsed NO_PROXY list.
type noProxy struct {
	all     bool
	nets    []*net.IPNet
	ips     []hostPort // IP addresses, compared as IPs
	domains []domain
}

type hostPort struct {
	ip   net.IP
	port string // "" for any
}

type domain struct {
	suffix string // ".example.com"
	exact  bool   // "example.com" itself matches too
	port   string // "" for any
}

func parseNoProxy(s string) *noProxy {
	m := &noProxy{}
	for _, e := range strings.Split(s, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		switch {
		case e == "":
			continue
		case e == "*":
			m.all = true
			continue
		}
		if _, n, err := net.ParseCIDR(e); err == nil {
			m.nets = append(m.nets, n)
			continue
		}
		host, port := e, ""
		if h, p, err := net.SplitHostPort(e); err == nil {
			host, port = h, p
		}
		if ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); ip != nil {
			m.ips = append(m.ips, hostPort{ip: ip, port: port})
			continue
		}
		host = strings.TrimPrefix(host, "*")
		if host == "" || host == "." {
			continue
		}
		d := domain{suffix: host, port: port}
		if !strings.HasPrefix(host, ".") {
			d.suffix, d.exact = "."+host, true
		}
		m.domains = append(m.domains, d)
	}
	return m
}

// match says whether u's host is one the list exempts from the proxy.
func (m *noProxy) match(u *url.URL) bool {
	if m.all {
		return true
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	if ip := net.ParseIP(host); ip != nil {
		for _, n := range m.nets {
			if n.Contains(ip) {
				return true
			}
		}
		for _, e := range m.ips {
			if e.ip.Equal(ip) && (e.port == "" || e.port == port) {
				return true
			}
		}
		return false
	}
	host = strings.TrimSuffix(host, ".")
	for _, d := range m.domains {
		if d.port != "" && d.port != port {
			continue
		}
		if strings.HasSuffix(host, d.suffix) || (d.exact && host == d.suffix[1:]) {
			return true
		}
	}
	return false
}

// defaultPort is the port of a URL scheme without one.
func defaultPort(scheme string) string {
	switch scheme {
	case "http", "ws":
		return "80"
	case "https", "wss":
		return "443"
	}
	return ""
}
