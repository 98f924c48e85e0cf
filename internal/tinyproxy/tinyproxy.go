// Package tinyproxy runs Debian's tinyproxy, a real HTTP forward proxy, on
// loopback for tests. Where tinyproxy is not installed the test is skipped,
// except in CI (CI=true), where it fails: .ci/run installs it.
package tinyproxy

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Waits of the helper.
const (
	startWait = 10 * time.Second
	stopWait  = 5 * time.Second
	pollEvery = 20 * time.Millisecond
)

// Options configure a proxy.
type Options struct {
	// ConnectPorts, when set, are the only ports CONNECT may reach
	// (tinyproxy's ConnectPort), like a proxy that allows only 443.
	ConnectPorts []int
	// User and Password, when User is set, are required of every client
	// (tinyproxy's BasicAuth).
	User, Password string
}

// Proxy is a running tinyproxy.
type Proxy struct {
	// Addr is where it listens: 127.0.0.1:port.
	Addr string
	// URL is http://Addr, with the user and password of Options if any.
	URL *url.URL

	log string // its log file
}

// Binary returns tinyproxy's path, or "" when it is not installed.
func Binary() string {
	if p, err := exec.LookPath("tinyproxy"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// Start runs tinyproxy in the foreground on a free loopback port and stops
// it when the test ends.
func Start(t testing.TB, opt Options) *Proxy {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("tinyproxy is not installed, and CI needs it: apt-get install -y tinyproxy (.ci/run does)")
		}
		t.Skip("tinyproxy is not installed (apt-get install -y tinyproxy); skipping the tests through a real proxy")
	}
	var lastErr error
	for range 3 { // the free port may be taken before tinyproxy binds it
		p, err := start(t, bin, opt)
		if err == nil {
			return p
		}
		lastErr = err
	}
	t.Fatalf("tinyproxy: %v", lastErr)
	return nil
}

func start(t testing.TB, bin string, opt Options) (*Proxy, error) {
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), log: filepath.Join(dir, "tinyproxy.log")}
	p.URL = &url.URL{Scheme: "http", Host: p.Addr}
	conf := []string{
		"Port " + strconv.Itoa(port),
		"Listen 127.0.0.1",
		"Timeout 120",
		"MaxClients 200",
		"Allow 127.0.0.1",
		"LogLevel Connect",
		fmt.Sprintf("LogFile %q", p.log),
		fmt.Sprintf("PidFile %q", filepath.Join(dir, "tinyproxy.pid")),
		"DisableViaHeader Yes",
	}
	for _, cp := range opt.ConnectPorts {
		conf = append(conf, "ConnectPort "+strconv.Itoa(cp))
	}
	if opt.User != "" {
		conf = append(conf, "BasicAuth "+opt.User+" "+opt.Password)
		p.URL.User = url.UserPassword(opt.User, opt.Password)
	}
	confPath := filepath.Join(dir, "tinyproxy.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-d", "-c", confPath)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(stopWait):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	deadline := time.Now().Add(startWait)
	for {
		c, err := net.DialTimeout("tcp", p.Addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-done:
			return nil, fmt.Errorf("tinyproxy exited (%v) before it listened on %s: %s %s", err, p.Addr, out, p.Log())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("tinyproxy did not listen on %s within %s: %s %s", p.Addr, startWait, out, p.Log())
		}
		time.Sleep(pollEvery)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("tinyproxy log:\n%s", p.Log())
		}
	})
	return p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Log returns tinyproxy's log so far.
func (p *Proxy) Log() string {
	b, err := os.ReadFile(p.log)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "(log: " + err.Error() + ")"
	}
	return string(b)
}

// requestLine matches the log line of a request tinyproxy received.
var requestLine = regexp.MustCompile(`Request \(file descriptor \d+\): (\S+) (\S+) HTTP/`)

// Requests returns the requests tinyproxy logged, "METHOD target" each, in
// order: "CONNECT 127.0.0.1:4222", "GET http://127.0.0.1:7070/healthz".
func (p *Proxy) Requests() []string {
	var out []string
	for _, m := range requestLine.FindAllStringSubmatch(p.Log(), -1) {
		out = append(out, m[1]+" "+m[2])
	}
	return out
}

// Count returns how many logged requests have method and a target that
// starts with target.
func (p *Proxy) Count(method, target string) int {
	n := 0
	for _, r := range p.Requests() {
		m, tgt, _ := strings.Cut(r, " ")
		if m == method && strings.HasPrefix(tgt, target) {
			n++
		}
	}
	return n
}
