package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// The ports API (API.md "Ports"): what listens on a target's machine, a
// reverse proxy to a port (WebSocket upgrades included), raw TCP streams
// over WebSocket (what `outpost port-forward` uses) and preview links
// (links.go). Every connection to a port is a pipe (pipes.go).

// Proxy settings.
const (
	// proxyIdleConns bounds the idle connections kept per port; each is an
	// open pipe to the agent.
	proxyIdleConns = 8
	// proxyIdleTimeout closes an idle kept connection.
	proxyIdleTimeout = 30 * time.Second
)

// previewSandbox is the Content-Security-Policy every document the proxy
// serves from the control plane's own origin gets: a sandbox without
// allow-same-origin makes the browser give the page an opaque origin, so
// a previewed app cannot read the API's tokens kept by the console in
// sessionStorage, nor register a service worker over the API's paths. A
// preview domain (Config.PreviewDomain) gives each link an origin of its
// own instead, without the sandbox.
const previewSandbox = "sandbox allow-scripts allow-forms allow-popups allow-popups-to-escape-sandbox allow-modals allow-downloads allow-pointer-lock allow-presentation"

func (s *Server) routePorts(mux *http.ServeMux) {
	s.handleTarget(mux, "GET", "/ports", s.handlePortList)
	s.handleTarget(mux, "GET", "/ports/{port}/tcp", s.handlePortTCP)
	s.handleTarget(mux, "", "/ports/{port}/http/{path...}", s.handlePortHTTP)
	s.handleTarget(mux, "", "/ports/{port}/http", func(w http.ResponseWriter, r *http.Request, _ target) error {
		http.Redirect(w, r, r.URL.Path+"/", http.StatusPermanentRedirect)
		return nil
	})
	s.handleTarget(mux, "POST", "/ports/{port}/links", s.handleCreateLink)
	s.handleTarget(mux, "GET", "/ports/{port}/links", s.handleListLinks)
	s.handleTarget(mux, "DELETE", "/ports/{port}/links/{id}", s.handleDeleteLink)
	s.handle(mux, previewPath+"{token}/{path...}", public, s.handlePreviewPath)
	s.handle(mux, previewPath+"{token}", public, func(w http.ResponseWriter, r *http.Request) error {
		http.Redirect(w, r, r.URL.Path+"/", http.StatusPermanentRedirect)
		return nil
	})
}

func (s *Server) handlePortList(w http.ResponseWriter, r *http.Request, t target) error {
	var res wire.PortListResult
	if err := t.Call(r.Context(), wire.OpPortList, nil, &res, rpc.CallOptions{}); err != nil {
		return err
	}
	if res.Ports == nil {
		res.Ports = []wire.Port{}
	}
	writeJSON(w, http.StatusOK, &res)
	return nil
}

// pathPort is the {port} of the path.
func pathPort(r *http.Request) (int, error) {
	p, err := strconv.Atoi(r.PathValue("port"))
	if err != nil {
		return 0, wire.Errorf(wire.CodeInvalidArgument, "", "port %q is not a number", r.PathValue("port"))
	}
	return p, wire.ValidPort(p)
}

// handlePortTCP carries one TCP connection to the port over a WebSocket
// (internal/websocket's stream: binary messages, a text EOF message for
// the half-close). The pipe is opened before the upgrade, so an agent
// offline (503) or nothing listening (502) is an ordinary error answer.
// The agent is asked to carry it on a bulk connection of its own (a
// stream may move a lot; the proxy's requests stay on frames over NATS).
func (s *Server) handlePortTCP(w http.ResponseWriter, r *http.Request, t target) error {
	port, err := pathPort(r)
	if err != nil {
		return err
	}
	if !websocket.IsUpgrade(r) {
		return wire.Errorf(wire.CodeInvalidArgument, "", "ports/%d/tcp is a WebSocket: send Upgrade: websocket", port)
	}
	b, withdraw := s.portBulk(r.Context(), r.PathValue("ws"), t)
	conn, err := s.pipes.dialWith(r.Context(), r.PathValue("ws"), t.Concurrent(), port, b)
	withdraw()
	if err != nil {
		return err
	}
	ws, err := websocket.Accept(w, r)
	if err != nil {
		conn.Close()
		var he *websocket.HandshakeError
		if errors.As(err, &he) {
			return nil // Accept answered
		}
		return err
	}
	s.splices.Add(1)
	defer s.splices.Done()
	ws.MaxMessage = websocket.StreamChunk * 4
	if g, ok := r.Context().Value(gatherKey{}).(*gatherConn); ok {
		ws.Gather = g.Gather // a message's TLS records in few writes
	}
	if err := websocket.Splice(ws, conn); err != nil {
		s.log.Debug("port stream ended", "port", port, "err", err)
	}
	return nil
}

// portBulk issues a ticket for a pipe on a bulk connection (bulkTicket);
// withdraw forgets it once the pipe is open. nil without a key to bind it
// to: the pipe's frames go over NATS.
func (s *Server) portBulk(ctx context.Context, ws string, t target) (b *pipeBulk, withdraw func()) {
	ticket, wait, withdraw, err := s.bulkTicket(ctx, ws, t)
	if err != nil {
		return nil, func() {}
	}
	return &pipeBulk{ticket: ticket, conns: wait.conn}, withdraw
}

// dialInfo is what the proxy's dial needs, carried by the request's
// context (the transport keeps its values).
type dialInfo struct {
	ws   string
	t    target
	port int
}

type dialInfoKey struct{}

// newPortTransport is the proxy's transport: its connections are pipes,
// kept alive and reused per target and port (the request's URL host names
// both, see proxyHost).
func (s *Server) newPortTransport() *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			di, ok := ctx.Value(dialInfoKey{}).(*dialInfo)
			if !ok {
				return nil, errors.New("ports proxy: dial without a target")
			}
			return s.pipes.dial(ctx, di.ws, di.t, di.port)
		},
		MaxIdleConnsPerHost:   proxyIdleConns,
		IdleConnTimeout:       proxyIdleTimeout,
		ResponseHeaderTimeout: 0, // a dev server may take its time
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
}

// proxyHost names a target and port for the transport's connection pool:
// connections are reused only for the same agent (or the same session at
// the same epoch: a swap sends new requests to new connections).
func proxyHost(ws string, t target, port int) string {
	return fmt.Sprintf("%s.%s.e%d.outpost-port:%d", ws, t.LastAgent(), t.Epoch(), port)
}

// handlePortHTTP is the reverse proxy of {target}/ports/{port}/http/.
func (s *Server) handlePortHTTP(w http.ResponseWriter, r *http.Request, t target) error {
	port, err := pathPort(r)
	if err != nil {
		return err
	}
	// The API's bearer token is the caller's credential for Outpost, never
	// the previewed service's.
	r.Header.Del("Authorization")
	prefix := strings.TrimSuffix(r.URL.EscapedPath(), escapedTail(r))
	s.proxyPort(w, r, r.PathValue("ws"), t.Concurrent(), port, prefix, true)
	return nil
}

// escapedTail is the {path...} of the request, as escaped in its URL.
func escapedTail(r *http.Request) string {
	p := r.PathValue("path")
	esc := (&url.URL{Path: p}).EscapedPath()
	if strings.HasSuffix(r.URL.EscapedPath(), esc) {
		return esc
	}
	return p
}

// proxyPort proxies r to port of t's machine; prefix is the part of the
// path before the service's own. sandbox adds previewSandbox to the
// responses (documents served on the API's origin).
func (s *Server) proxyPort(w http.ResponseWriter, r *http.Request, ws string, t target, port int, prefix string, sandbox bool) {
	host := proxyHost(ws, t, port)
	rp := &httputil.ReverseProxy{
		Transport:     s.portTransport,
		FlushInterval: -1,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetXForwarded()
			pr.Out.Header.Set("X-Forwarded-Prefix", strings.TrimSuffix(prefix, "/"))
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = host
			rest := strings.TrimPrefix(pr.In.URL.EscapedPath(), strings.TrimSuffix(prefix, "/"))
			if !strings.HasPrefix(rest, "/") {
				rest = "/" + rest
			}
			u, err := url.Parse(rest)
			if err == nil {
				pr.Out.URL.Path, pr.Out.URL.RawPath = u.Path, u.RawPath
			}
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			pr.Out.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		},
		ModifyResponse: func(res *http.Response) error {
			res.Header.Del("Service-Worker-Allowed")
			if sandbox {
				res.Header.Add("Content-Security-Policy", previewSandbox)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var we *wire.Error
			if !errors.As(err, &we) {
				if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
					return // the client went away
				}
				err = wire.Errorf(wire.CodeBadGateway, "", "port %d: %v", port, err)
			}
			writeError(s.log, w, r, err)
		},
	}
	rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), dialInfoKey{}, &dialInfo{ws: ws, t: t, port: port})))
}
