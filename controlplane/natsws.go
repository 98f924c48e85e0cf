package controlplane

import (
	"context"
	"net/http"

	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/wire"
)

// NATSPath is where agents reach NATS over WebSocket on the control plane's
// own port: one port (443) carries the API and every agent connection.
const NATSPath = wire.NATSPath

// handleNATS serves an agent's NATS over WebSocket on NATSPath: TLS and the
// WebSocket end here, and the NATS protocol inside goes to the embedded
// server over an in-process connection, where the server authenticates it
// (the agent's JWT) like any client. No loopback socket is involved: an
// agent costs the control plane one file descriptor, and its bytes one
// copy fewer each way.
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
	c, err := s.ns.InProcessConn()
	if err != nil {
		release()
		writeError(s.log, w, r, wire.Errorf(wire.CodeUnavailable, "", "embedded NATS: %v", err))
		return
	}
	ws, err := websocket.AcceptRelay(w, r)
	if err != nil {
		release()
		c.Close()
		return // Accept answered a bad handshake itself
	}
	nc := &answeredConn{Conn: c, done: release}
	var opt websocket.RelayOptions
	if g := gatherOf(ws.NetConn()); g != nil {
		opt.Gather = g.Gather
	}
	s.splices.Add(1)
	go func() {
		defer s.splices.Done()
		defer release() // a connection that ended before its CONNECT was answered
		_ = websocket.Relay(ws, nc, opt)
	}()
}
