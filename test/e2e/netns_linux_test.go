package e2e

import (
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
