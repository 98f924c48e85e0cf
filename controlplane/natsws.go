package controlplane

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/wire"
)

// NATSPath is where agents reach NATS over WebSocket on the control plane's
// own port: one port (443) carries the API and every agent connection.
const NATSPath = wire.NATSPath

// handleNATS serves an agent's NATS over WebSocket on NATSPath: TLS and the
// WebSocket end here, and the NATS protocol inside goes to the embedded
// server as an in-process client (natsclient.go), where the server
// authenticates it (the agent's JWT) like any client. No loopback socket
// and no pipe is involved: an agent costs the control plane one file
// descriptor and the server's two goroutines, and its bytes are copied
// once each way.
func (s *Server) handleNATS(w http.ResponseWriter, r *http.Request) {
	if s.ns == nil || s.tls == nil {
		writeError(s.log, w, r, wire.Errorf(wire.CodeNotFound, "", "NATS over WebSocket is served only with TLS and the embedded NATS server"))
		return
	}
	if !websocket.IsUpgrade(r) {
		writeError(s.log, w, r, wire.Errorf(wire.CodeInvalidArgument, "", "%s takes a WebSocket upgrade", NATSPath))
		return
	}
	// Wait for a turn at the embedded server's connect exchange (admit.go);
	// an agent that gives up meanwhile closes its connection, which ends
	// the request's context.
	ctx, cancel := context.WithTimeout(r.Context(), natsAdmitWait)
	release, err := s.admit.acquire(ctx)
	cancel()
	if err != nil {
		if r.Context().Err() == nil {
			writeError(s.log, w, r, wire.Errorf(wire.CodeUnavailable, "", "too many agents connecting; try again"))
		}
		return
	}
	ws, err := websocket.AcceptStream(w, r)
	if err != nil {
		release()
		return // Accept answered a bad handshake itself
	}
	var opt websocket.StreamOptions
	if g := gatherOf(ws.NetConn()); g != nil {
		opt.Gather = g.Gather
	}
	st, err := websocket.NewServerStream(ws, opt)
	if err != nil {
		release()
		_ = ws.Close()
		return
	}
	// The server's read and write loops run on the stream itself; the
	// slot is released at the server's answer to CONNECT, or when the
	// connection ends before it.
	serveNATSClient(s.ns, &answeredConn{Conn: &watchedConn{Conn: st}, done: release})
}

// agentSilence is how long the control plane reads no NATS bytes from an
// agent over wss before it takes the link for dead and closes the
// connection (the server's disconnect event then ends the agent's
// presence). The agent pings every wire.PingInterval, so this is two pings
// missed and a third late by 2 s: a half-open laptop link is noticed in
// 12 s, where the server's own pings, which this spares it
// (serverPingInterval), took 10–15 s. An agent that pinged less often than
// every 10 s would be cut off: wire.PingInterval is part of the protocol.
const agentSilence = 2*wire.PingInterval + 2*time.Second

// watchedConn is an agent's wss connection as the embedded server reads
// it: each read must bring something within agentSilence, or it fails
// with a timeout, on which the server closes the connection.
type watchedConn struct {
	net.Conn
}

func (c *watchedConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(agentSilence)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}
