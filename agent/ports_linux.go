package agent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/outposthq/outpost/wire"
)

// portsListable: Linux lists from /proc/net/tcp and tcp6.
const portsListable = true

// listPorts reads the machine's TCP listeners on loopback and wildcard
// addresses, with their processes where /proc shows them (the agent's
// own user's, or all when it runs as root).
func listPorts(ctx context.Context) ([]wire.Port, error) {
	var socks []listenSocket
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(name)
		if err != nil {
			if os.IsNotExist(err) {
				continue // no IPv6
			}
			return nil, wire.Errorf(wire.CodeInternal, "", "read %s: %v", name, err)
		}
		socks = append(socks, parseProcNetTCP(string(b))...)
	}
	owners := socketOwners(ctx, socks)
	ports := make([]wire.Port, 0, len(socks))
	for _, s := range socks {
		p := wire.Port{Port: s.port, Address: s.addr}
		if o, ok := owners[s.inode]; ok {
			p.PID, p.Process = o.pid, o.name
		}
		ports = append(ports, p)
	}
	return ports, nil
}

// listenSocket is one listening socket of /proc/net/tcp*.
type listenSocket struct {
	addr  string
	port  int
	inode string
}

// parseProcNetTCP takes the LISTEN sockets (state 0A) on loopback or
// wildcard addresses out of the text of /proc/net/tcp or tcp6.
func parseProcNetTCP(text string) []listenSocket {
	var out []listenSocket
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 10 || f[3] != "0A" {
			continue
		}
		host, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil || port == 0 {
			continue
		}
		addr, ok := procAddr(host)
		if !ok {
			continue
		}
		out = append(out, listenSocket{addr: addr, port: int(port), inode: f[9]})
	}
	return out
}

// procAddr decodes an address of /proc/net/tcp* (32-bit words in host
// order, little-endian on every system Outpost builds for) and keeps
// loopback and wildcard ones.
func procAddr(h string) (string, bool) {
	var b []byte
	switch len(h) {
	case 8, 32:
		for w := 0; w < len(h); w += 8 {
			v, err := strconv.ParseUint(h[w:w+8], 16, 32)
			if err != nil {
				return "", false
			}
			b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
		}
	default:
		return "", false
	}
	ip := netIP(b)
	if !ip.IsLoopback() && !ip.IsUnspecified() {
		// An IPv4-mapped wildcard or loopback is kept by the checks above.
		return "", false
	}
	return ip.String(), true
}

// owner is a socket's process.
type owner struct {
	pid  int
	name string
}

// socketOwners finds the processes holding socks, by their inodes, from
// /proc/<pid>/fd. Processes it may not look into are skipped.
func socketOwners(ctx context.Context, socks []listenSocket) map[string]owner {
	want := make(map[string]bool, len(socks))
	for _, s := range socks {
		want["socket:["+s.inode+"]"] = true
	}
	found := map[string]owner{}
	if len(want) == 0 {
		return found
	}
	procs, _ := os.ReadDir("/proc")
	for _, d := range procs {
		if ctx.Err() != nil || len(found) == len(want) {
			break
		}
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", d.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !want[link] {
				continue
			}
			inode := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
			if _, ok := found[inode]; !ok {
				comm, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "comm"))
				found[inode] = owner{pid: pid, name: strings.TrimSpace(string(comm))}
			}
		}
	}
	return found
}
