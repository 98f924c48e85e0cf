package controlplane

import (
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
	nc, err := s.ns.InProcessConn()
	if err != nil {
		writeError(s.log, w, r, wire.Errorf(wire.CodeUnavailable, "", "embedded NATS: %v", err))
		return
	}
	ws, err := websocket.AcceptRelay(w, r)
	if err != nil {
		nc.Close()
		return // Accept answered a bad handshake itself
	}
	var opt websocket.RelayOptions
	if g := gatherOf(ws.NetConn()); g != nil {
		opt.Gather = g.Gather
	}
	s.splices.Add(1)
	go func() {
		defer s.splices.Done()
		_ = websocket.Relay(ws, nc, opt)
	}()
}
