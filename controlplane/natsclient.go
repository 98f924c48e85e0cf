package controlplane

import (
	"net"
	"unsafe"

	"github.com/nats-io/nats-server/v2/server"
)

// serveNATSClient hands conn to the embedded server as an in-process
// client, as Server.InProcessConn does with its end of a net.Pipe: the
// server authenticates it and runs its read and write loops on conn
// itself. For an agent over wss, conn is the WebSocket stream: with the
// pipe, each agent cost two more goroutines (copying between the pipe and
// the WebSocket) and the pipe's state; at 10,000 agents those were a fifth
// of serve's memory and of what its collector marks.
//
// nats-server exports no way to hand it a connection, so this reaches its
// unexported constructor by name. The signature is checked by the tests
// that run agents over wss (every one of them goes through it) and pinned
// by TestNATSServerVersionPinned: a nats-server upgrade must re-read
// server.(*Server).createClientInProcess and update the pin.
func serveNATSClient(ns *server.Server, conn net.Conn) {
	createClientInProcess(ns, conn)
}

// createClientInProcess is nats-server v2.15.3's
// func (s *Server) createClientInProcess(conn net.Conn) *client.
//
//go:linkname createClientInProcess github.com/nats-io/nats-server/v2/server.(*Server).createClientInProcess
func createClientInProcess(s *server.Server, conn net.Conn) unsafe.Pointer

// pinnedNATSServer is the nats-server version whose createClientInProcess
// serveNATSClient was written against.
const pinnedNATSServer = "v2.15.3"
