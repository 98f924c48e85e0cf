package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A real link for the fault tests: the agent runs in a network namespace
// of the test's own, joined to the root namespace (where the control plane
// and NATS run) by a veth pair with a /30 of 10.231.0.0/16 between them.
// The namespace has no other interface and no route beyond the /30, so
// nothing the agent sends can reach any other address. Cutting the link is
// `ip link set DEV down` on the root side: the agent's side loses its
// carrier, as a laptop's Wi-Fi does when the access point goes away.

// netLink is one such link.
type netLink struct {
	t              testing.TB
	ns             string // the namespace
	hostDev, nsDev string // the veth's ends
	hostIP, nsIP   string // addresses of the /30
}

var (
	netLinkSeq   atomic.Int64
	pruneNetOnce sync.Once
)

// netnsPrefix names this process's namespaces, so that a later run can
// remove those a killed run left.
func netnsPrefix(pid int) string { return fmt.Sprintf("opf-%d-", pid) }

// requireNetns skips the test when network namespaces cannot be made here
// (not root, no `ip`), except in CI as root, where it fails: there the
// fault tests must run (.ci/run installs iproute2).
func requireNetns(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "fault tests need root to make network namespaces and veth pairs"
	} else if _, err := exec.LookPath("ip"); err != nil {
		why = "fault tests need the ip command (iproute2)"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" && os.Geteuid() == 0 {
		t.Fatalf("%s; in CI as root they must run", why)
	}
	t.Skip("skipped: " + why)
}

// newNetLink makes a namespace and a veth pair into it, removed at cleanup.
func newNetLink(t testing.TB) *netLink {
	t.Helper()
	requireNetns(t)
	pruneNetOnce.Do(pruneStaleNetns)
	n := netLinkSeq.Add(1)
	pid := os.Getpid()
	l := &netLink{
		t:       t,
		ns:      netnsPrefix(pid) + strconv.FormatInt(n, 10),
		hostDev: fmt.Sprintf("opf%dh%d", pid%1000000, n),
		nsDev:   fmt.Sprintf("opf%da%d", pid%1000000, n),
	}
	if out, err := exec.Command("ip", "netns", "add", l.ns).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ip netns add: %v\n%s", err, out)
		}
		t.Skipf("skipped: cannot make a network namespace here: %v: %s", err, out)
	}
	t.Cleanup(l.remove)
	l.ip("link", "add", l.hostDev, "type", "veth", "peer", "name", l.nsDev)
	l.ip("link", "set", l.nsDev, "netns", l.ns)
	unlock := lockNetAlloc(t)
	defer unlock()
	hostIP, nsIP := freeSlash30(t)
	l.hostIP, l.nsIP = hostIP.String(), nsIP.String()
	l.ip("addr", "add", l.hostIP+"/30", "dev", l.hostDev)
	l.ip("link", "set", l.hostDev, "up")
	l.ip("-n", l.ns, "addr", "add", l.nsIP+"/30", "dev", l.nsDev)
	l.ip("-n", l.ns, "link", "set", l.nsDev, "up")
	l.ip("-n", l.ns, "link", "set", "lo", "up")
	return l
}

// ip runs the ip command, failing the test on error.
func (l *netLink) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// cut takes the link down on the root side; restore brings it back.
func (l *netLink) cut()     { l.t.Helper(); l.ip("link", "set", l.hostDev, "down") }
func (l *netLink) restore() { l.t.Helper(); l.ip("link", "set", l.hostDev, "up") }

// command is name with args run inside the namespace.
func (l *netLink) command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", l.ns, name}, args...)...)
}

// remove deletes the namespace (and with it the veth pair).
func (l *netLink) remove() {
	_ = exec.Command("ip", "link", "del", l.hostDev).Run()
	if out, err := exec.Command("ip", "netns", "del", l.ns).CombinedOutput(); err != nil {
		l.t.Errorf("ip netns del %s: %v\n%s", l.ns, err, out)
	}
}

// pruneStaleNetns removes the namespaces of test processes that are gone.
func pruneStaleNetns() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, "opf-")
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		_ = exec.Command("ip", "netns", "del", name).Run()
	}
}

// lockNetAlloc serialises the choice of /30s between test processes on
// this machine (two packages' tests, or two runs, at once).
func lockNetAlloc(t testing.TB) (unlock func()) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "outpost-fault-netns.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// freeSlash30 picks a /30 of 10.231.0.0/16 that no interface of the root
// namespace has an address in; it returns its two host addresses.
func freeSlash30(t testing.TB) (net.IP, net.IP) {
	t.Helper()
	_, pool, _ := net.ParseCIDR("10.231.0.0/16")
	used := map[int]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && pool.Contains(ipn.IP) {
			ip4 := ipn.IP.To4()
			used[(int(ip4[2])<<8|int(ip4[3]))>>2] = true
		}
	}
	for range 1000 {
		n := rand.IntN(1 << 14)
		if used[n] {
			continue
		}
		base := n << 2
		host := net.IPv4(10, 231, byte(base>>8), byte(base&0xff|1))
		peer := net.IPv4(10, 231, byte(base>>8), byte(base&0xff|2))
		return host, peer
	}
	t.Fatal("no free /30 in 10.231.0.0/16")
	return nil, nil
}

// TestNewcomerAcrossALink is issue 11's "done when": `serve
// --tls-self-signed ADDR` on one machine; on another (a network namespace
// here, joined by a veth) the token's enrollCommand pasted as given, the
// agent run, and a command run from the first machine with the CLI. A
// relay in the middle of the link carries everything the agent sends and
// receives (enrollment, then NATS over wss:// through the API's port) and
// must see nothing in clear: no command output, no token, no NATS CONNECT.
// The same relay with plaintext NATS does see the output, so the test can
// fail.
func TestNewcomerAcrossALink(t *testing.T) {
	t.Parallel()
	// The command's output, which its argv does not spell out.
	const script, marker = `echo "outpost-in-the-clear-$((6*7))-marker"`, "outpost-in-the-clear-42-marker"
	for _, tr := range []transport{overWSS, overNATS} {
		t.Run(string(tr), func(t *testing.T) {
			t.Parallel()
			l := newNetLink(t)
			cfg := cpConfig{natsHost: l.hostIP, natsPort: freePort(t), httpPort: freePort(t), tls: tr == overWSS}
			r := &relay{t: t}
			if cfg.tls {
				// Everything through the relay: the API and NATS share its port.
				cfg.publicURL = "https://" + r.forward(net.JoinHostPort(l.hostIP, "0"), net.JoinHostPort(l.hostIP, strconv.Itoa(cfg.httpPort)))
			} else {
				cfg.agentURL = "nats://" + r.forward(net.JoinHostPort(l.hostIP, "0"), net.JoinHostPort(l.hostIP, strconv.Itoa(cfg.natsPort)))
			}
			cp := startControlPlaneWith(t, cfg)
			cp.workspace("default")
			env := []string{"OUTPOST_URL=" + cp.url, "OUTPOST_TOKEN=" + adminToken}
			if cfg.tls {
				env = append(env, "OUTPOST_CA_FILE="+cp.caFile())
			}
			config := filepath.Join(t.TempDir(), "agent.json")
			var token string
			if cfg.tls {
				// The line `outpost token create` prints, run as given on
				// the other machine; only the program's path and the
				// config's are this test's own.
				out := mustRunWithEnv(t, env, "token", "create", "--agent", "laptop")
				_, line, _ := strings.Cut(out, "on the machine, run:\n")
				args := strings.Fields(line)
				if len(args) < 3 || args[0] != "outpost" || !strings.Contains(line, "--url "+cfg.publicURL+" ") || !strings.Contains(line, "--ca-sha256 ") {
					t.Fatalf("outpost token create printed no enrollCommand with the public URL and a CA pin:\n%s", out)
				}
				for i, a := range args {
					switch {
					case a == "~/.outpost/agent.json":
						args[i] = config
					case i > 0 && args[i-1] == "--token":
						token = a
					}
				}
				if out, err := l.command(outpostBin, args[1:]...).CombinedOutput(); err != nil {
					t.Fatalf("%s (in the namespace): %v\n%s", line, err, out)
				}
			} else {
				config = cp.enroll("default", "laptop", "")
			}
			startCommand(t, nil, l.command(outpostBin, "agent", "run", "--config", config, "--root", t.TempDir()))
			cp.waitStatus("default", "laptop", "online")

			out := mustRunWithEnv(t, env, "exec", "--agent", "laptop", "--", "sh", "-c", script)
			if strings.TrimSpace(out) != marker {
				t.Fatalf("outpost exec: %q, want %q", out, marker)
			}
			conns, n := r.stats()
			t.Logf("%s: the relay carried %d connections, %d bytes", tr, conns, n)
			if n < 1000 {
				t.Fatalf("the relay carried %d bytes: the agent went around it", n)
			}
			if !cfg.tls {
				if !r.saw(marker) {
					t.Fatalf("plaintext NATS through the relay: the command's output %q not seen in clear", marker)
				}
				return
			}
			for what, s := range map[string]string{"the command's output": marker, "the enrollment token": token, "a NATS CONNECT": "CONNECT {"} {
				if r.saw(s) {
					t.Errorf("the relay saw %s (%q) in clear", what, s)
				}
			}
			if !r.allTLS() {
				t.Errorf("a connection through the relay did not begin with a TLS handshake")
			}
		})
	}
}

// relay is a TCP relay on a link that keeps every byte it carries, by
// connection and direction.
type relay struct {
	t     testing.TB
	mu    sync.Mutex
	seen  []*bytes.Buffer // each connection's bytes one way, then the other
	conns []net.Conn
}

// forward relays connections to listen (host:0) to upstream until the
// test ends, and returns the address it listens on.
func (r *relay) forward(listen, upstream string) string {
	r.t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		r.t.Fatalf("relay: %v", err)
	}
	var wg sync.WaitGroup
	r.t.Cleanup(func() {
		ln.Close()
		r.mu.Lock()
		for _, c := range r.conns {
			c.Close()
		}
		r.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", upstream, 5*time.Second)
			if err != nil {
				down.Close()
				continue
			}
			r.mu.Lock()
			toUp, toDown := &bytes.Buffer{}, &bytes.Buffer{}
			r.seen = append(r.seen, toUp, toDown)
			r.conns = append(r.conns, down, up)
			r.mu.Unlock()
			wg.Add(2)
			go r.copy(&wg, up, down, toUp)
			go r.copy(&wg, down, up, toDown)
		}
	}()
	return ln.Addr().String()
}

// copy carries src to dst, keeping a copy in rec; it closes both when
// either side ends.
func (r *relay) copy(wg *sync.WaitGroup, dst, src net.Conn, rec *bytes.Buffer) {
	defer wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.mu.Lock()
			rec.Write(buf[:n])
			r.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// saw reports whether s crossed the relay in clear, either way.
func (r *relay) saw(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.seen {
		if bytes.Contains(b.Bytes(), []byte(s)) {
			return true
		}
	}
	return false
}

// stats is how many connections and bytes the relay carried.
func (r *relay) stats() (conns, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.seen {
		n += b.Len()
	}
	return len(r.seen) / 2, n
}

// allTLS reports whether every connection's first bytes toward the server
// were a TLS handshake record (content type 22, version 3.x).
func (r *relay) allTLS() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; i < len(r.seen); i += 2 {
		b := r.seen[i].Bytes()
		if len(b) > 0 && (len(b) < 3 || b[0] != 22 || b[1] != 3) {
			return false
		}
	}
	return true
}
