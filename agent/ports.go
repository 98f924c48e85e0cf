package agent

import (
	"context"
	"net"
	"sort"
	"strconv"
	"time"

	"github.com/outposthq/outpost/wire"
)

// The agent's ports: port.list says what listens on the machine
// (ports_linux.go; other systems answer unsupported), port.open connects
// to one and carries the connection as a pipe (pipes.go).

// portDialTimeout bounds a connection to a local port.
const portDialTimeout = 5 * time.Second

func (a *Agent) registerPortOps() {
	a.Register(wire.OpPortList, a.portList)
	a.Register(wire.OpPortOpen, a.pipes.openOp)
}

// portCapabilities are the flags hello reports for ports: listing where
// the system lets the agent list, pipes everywhere.
func portCapabilities() map[string]bool {
	return map[string]bool{"ports": portsListable, "portForward": true}
}

func (a *Agent) portList(ctx context.Context, _ *wire.Request) (any, error) {
	ports, err := listPorts(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(ports, func(i, j int) bool {
		if ports[i].Port != ports[j].Port {
			return ports[i].Port < ports[j].Port
		}
		return ports[i].Address < ports[j].Address
	})
	return &wire.PortListResult{Ports: ports}, nil
}

// dialPort is the one place the agent opens a connection to a port of its
// machine, for every pipe: the owner's policy (its allow-list of ports)
// is checked here. It tries 127.0.0.1, then [::1] (a dev server that listens
// on "localhost" may have only the IPv6 one). Nothing listening is
// bad_gateway/connection_refused.
func (a *Agent) dialPort(ctx context.Context, port int) (net.Conn, error) {
	if err := wire.ValidPort(port); err != nil {
		return nil, err
	}
	// The owner's ports allow-list, before any dial.
	if err := a.cfg.Policy.Current().AllowPort(port); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, portDialTimeout)
	defer cancel()
	var d net.Dialer
	var firstErr error
	for _, host := range []string{"127.0.0.1", "::1"} {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if !dialTryNext(err) {
			break
		}
	}
	if dialRefused(firstErr) {
		return nil, wire.Errorf(wire.CodeBadGateway, wire.ReasonConnectionRefused, "nothing listens on port %d of the agent's machine", port)
	}
	return nil, wire.Errorf(wire.CodeBadGateway, "", "connect to port %d: %v", port, firstErr)
}

// netIP is b as an IP, IPv4-mapped IPv6 addresses as IPv4.
func netIP(b []byte) net.IP {
	ip := net.IP(b)
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	return ip
}
