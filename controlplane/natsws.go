package controlplane

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/outposthq/outpost/wire"
)

// NATSPath is where agents reach NATS over WebSocket on the control plane's
// own port: one port (443) carries the API and every agent connection.
const NATSPath = "/v1/nats"

// natsDialTimeout bounds the dial to the embedded server's WebSocket
// listener on loopback.
const natsDialTimeout = 5 * time.Second

// handleNATS passes a WebSocket upgrade on NATSPath to the embedded server's
// WebSocket listener on loopback and splices the two connections: TLS ends
// here, NATS (and its own authentication, the agent's JWT) runs inside.
func (s *Server) handleNATS(w http.ResponseWriter, r *http.Request) {
	if s.natsWS == "" {
		writeError(s.log, w, r, wire.Errorf(wire.CodeNotFound, "", "NATS over WebSocket is served only with the embedded NATS server"))
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		writeError(s.log, w, r, wire.Errorf(wire.CodeInvalidArgument, "", "%s takes a WebSocket upgrade", NATSPath))
		return
	}
	up, err := net.DialTimeout("tcp", s.natsWS, natsDialTimeout)
	if err != nil {
		writeError(s.log, w, r, wire.Errorf(wire.CodeUnavailable, "", "embedded NATS: %v", err))
		return
	}
	down, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		writeError(s.log, w, r, fmt.Errorf("hijack: %w", err))
		return
	}
	_ = down.SetDeadline(time.Time{}) // the server's header and body deadlines no longer apply
	if err := r.Write(up); err != nil {
		up.Close()
		down.Close()
		return
	}
	// Bytes the client sent after its request, already read into buf.
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			up.Close()
			down.Close()
			return
		}
	}
	s.splices.Add(1)
	go func() {
		defer s.splices.Done()
		splice(down, up)
	}()
}

// splice copies both ways until either side ends, then closes both.
func splice(a, b net.Conn) {
	var once sync.Once
	closeBoth := func() { a.Close(); b.Close() }
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(a, b)
		once.Do(closeBoth)
	}()
	_, _ = io.Copy(b, a)
	once.Do(closeBoth)
	<-done
}
