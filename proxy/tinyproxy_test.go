package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/outposthq/outpost/internal/tinyproxy"
)

// Through a real forward proxy: Debian's tinyproxy.

func TestTinyproxyTunnels(t *testing.T) {
	const greeting = "INFO {}\r\n"
	target := echoServer(t, greeting)
	p := tinyproxy.Start(t, tinyproxy.Options{})
	d := &Dialer{Proxy: Fixed(p.URL, "")}
	for i := range 3 {
		c, err := d.DialContext(context.Background(), "tcp", target)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(greeting))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != greeting {
			t.Fatalf("first bytes: got %q, %v; want %q", got, err, greeting)
		}
		roundTrip(t, c, "ping "+strconv.Itoa(i)+"\n")
		c.Close()
	}
	if n := p.Count("CONNECT", target); n != 3 {
		t.Errorf("tinyproxy logged %d CONNECTs to %s, want 3; requests: %q", n, target, p.Requests())
	}
}

// A proxy that lets CONNECT reach one port only, as those that allow 443.
func TestTinyproxyConnectPortOnly(t *testing.T) {
	allowed, other := echoServer(t, ""), echoServer(t, "")
	_, port, _ := net.SplitHostPort(allowed)
	n, _ := strconv.Atoi(port)
	p := tinyproxy.Start(t, tinyproxy.Options{ConnectPorts: []int{n}})
	d := &Dialer{Proxy: Fixed(p.URL, "")}

	c, err := d.DialContext(context.Background(), "tcp", allowed)
	if err != nil {
		t.Fatalf("CONNECT to the allowed port: %v", err)
	}
	roundTrip(t, c, "hello\n")
	c.Close()

	c, err = d.DialContext(context.Background(), "tcp", other)
	if err == nil {
		c.Close()
		t.Fatalf("CONNECT to %s went through; the proxy allows only port %d", other, n)
	}
	var re *RefusedError
	if !errors.As(err, &re) || re.StatusCode != 403 {
		t.Fatalf("got %v, want a *RefusedError with 403", err)
	}
	if want := "proxy " + p.URL.String() + " refused CONNECT to " + other + ": 403 "; !strings.Contains(err.Error(), want) {
		t.Errorf("got %q, want it to contain %q", err, want)
	}
}

func TestTinyproxyAuth(t *testing.T) {
	target := echoServer(t, "")
	p := tinyproxy.Start(t, tinyproxy.Options{User: "alice", Password: "s3cret"})

	noAuth := *p.URL
	noAuth.User = nil
	_, err := (&Dialer{Proxy: Fixed(&noAuth, "")}).DialContext(context.Background(), "tcp", target)
	var re *RefusedError
	if !errors.As(err, &re) || re.StatusCode != 407 {
		t.Fatalf("without credentials: got %v, want a 407 refusal", err)
	}

	c, err := (&Dialer{Proxy: Fixed(p.URL, "")}).DialContext(context.Background(), "tcp", target)
	if err != nil {
		t.Fatalf("with credentials: %v", err)
	}
	roundTrip(t, c, "hello\n")
	c.Close()
}

// The zero Dialer tunnels through the proxy HTTPS_PROXY names. Loopback is
// never proxied from the environment, so the destination is an address of
// TEST-NET-1 on a port the proxy refuses: the refusal shows the dial went
// through the proxy, and nothing leaves the machine.
func TestEnvironmentProxyThroughTinyproxy(t *testing.T) {
	const target = "192.0.2.1:444"
	if os.Getenv("OUTPOST_PROXY_ENV_CHILD") == "1" {
		_, err := (&Dialer{}).DialContext(context.Background(), "tcp", target)
		var re *RefusedError
		if !errors.As(err, &re) || re.StatusCode != 403 || re.Proxy != os.Getenv("HTTPS_PROXY") {
			t.Fatalf("got %v, want the refusal of the proxy in HTTPS_PROXY", err)
		}
		return
	}
	p := tinyproxy.Start(t, tinyproxy.Options{ConnectPorts: []int{443}})
	runChild(t, "TestEnvironmentProxyThroughTinyproxy", "HTTPS_PROXY="+p.URL.String())
	if n := p.Count("CONNECT", target); n != 1 {
		t.Errorf("tinyproxy logged %d CONNECTs to %s, want 1; requests: %q", n, target, p.Requests())
	}
}

// runChild runs the test named test in a child process with env added to an
// environment free of proxy variables, and fails if it fails.
func runChild(t *testing.T, test string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "REQUEST_METHOD":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "OUTPOST_PROXY_ENV_CHILD=1")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", test, err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("child %s ran no test:\n%s", test, out)
	}
}
