package agent

import (
	"net"
	"testing"
)

// A dial to a loopback port nothing listens on is "refused" on this
// system, as its network stack reports it (port.open's
// connection_refused reason rests on it).
func TestDialRefusedOfAClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
		t.Skip("the port was taken again meanwhile")
	}
	if !dialRefused(err) || !dialTryNext(err) {
		t.Fatalf("dial of a closed port: %v (%T), not taken as refused", err, err)
	}
}
