package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/internal/leaktest"
)

func TestMain(m *testing.M) { leaktest.Main(m, "outpost/proxy.") }

// Waits of the tests.
const (
	waitLong  = 10 * time.Second
	shortWait = 300 * time.Millisecond
)

// echoServer accepts connections on loopback and echoes them, after
// sending greeting (a NATS server speaks first).
func echoServer(t testing.TB, greeting string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				if greeting != "" {
					if _, err := io.WriteString(c, greeting); err != nil {
						return
					}
				}
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return l.Addr().String()
}

// fakeProxy is a CONNECT proxy in the test, whose answer the test picks.
type fakeProxy struct {
	addr string
	// answer, when set, is written instead of tunnelling; "" tunnels.
	answer string
	// silent makes the proxy read the request and never answer.
	silent bool
	// greet is sent in the same write as a 200 answer, before tunnelling.
	greet string

	mu       sync.Mutex
	requests []*http.Request
	closed   chan struct{} // one value per client connection that ended
}

func startFakeProxy(t testing.TB, p *fakeProxy) *fakeProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr, p.closed = l.Addr().String(), make(chan struct{}, 100)
	var wg sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { close(done); l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { p.closed <- struct{}{} }()
				defer c.Close()
				p.serve(c, done)
			}()
		}
	}()
	return p
}

func (p *fakeProxy) serve(c net.Conn, done <-chan struct{}) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.requests = append(p.requests, req)
	p.mu.Unlock()
	switch {
	case p.silent:
		// Hold the connection until the client or the test ends it.
		go func() { <-done; c.Close() }()
		_, _ = io.Copy(io.Discard, br)
		return
	case p.answer != "":
		_, _ = io.WriteString(c, p.answer)
		return
	}
	up, err := net.Dial("tcp", req.Host)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	defer up.Close()
	greeting := make([]byte, len(p.greet))
	if _, err := io.ReadFull(up, greeting); err != nil {
		return
	}
	// The answer and the destination's first bytes in one write.
	if _, err := c.Write(append([]byte("HTTP/1.1 200 Connection established\r\n\r\n"), greeting...)); err != nil {
		return
	}
	go func() { _, _ = io.Copy(up, br); up.Close() }()
	_, _ = io.Copy(c, up)
}

func (p *fakeProxy) lastRequest(t testing.TB) *http.Request {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.requests) == 0 {
		t.Fatal("the proxy got no request")
	}
	return p.requests[len(p.requests)-1]
}

// waitClosed waits for the proxy to see a client connection end.
func (p *fakeProxy) waitClosed(t testing.TB) {
	t.Helper()
	select {
	case <-p.closed:
	case <-time.After(waitLong):
		t.Fatal("the connection to the proxy was left open")
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// roundTrip sends a line on c and reads it back.
func roundTrip(t testing.TB, c net.Conn, line string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(waitLong))
	if _, err := io.WriteString(c, line); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(line))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != line {
		t.Fatalf("echo: got %q, want %q", got, line)
	}
}

func TestDialTunnels(t *testing.T) {
	const greeting = "INFO {}\r\n"
	target := echoServer(t, greeting)
	p := startFakeProxy(t, &fakeProxy{greet: greeting})
	d := &Dialer{Proxy: Fixed(mustURL(t, "http://alice:s3cret@"+p.addr), "")}
	c, err := d.DialContext(context.Background(), "tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make([]byte, len(greeting))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != greeting {
		t.Fatalf("first bytes: got %q, %v; want the destination's greeting %q", got, err, greeting)
	}
	roundTrip(t, c, "PING\r\n")
	req := p.lastRequest(t)
	if req.Method != http.MethodConnect || req.Host != target {
		t.Errorf("got %s %s, want CONNECT %s", req.Method, req.Host, target)
	}
	if user, pass, ok := req.BasicAuth(); ok {
		t.Errorf("Authorization %s:%s sent to a proxy; want Proxy-Authorization", user, pass)
	}
	if got, want := req.Header.Get("Proxy-Authorization"), "Basic YWxpY2U6czNjcmV0"; got != want {
		t.Errorf("Proxy-Authorization %q, want %q", got, want)
	}
}

func TestDialDirectWhenNoProxy(t *testing.T) {
	target := echoServer(t, "")
	p := startFakeProxy(t, &fakeProxy{})
	_, port, _ := net.SplitHostPort(target)
	for _, noProxy := range []string{"127.0.0.1", "127.0.0.0/8", "*", "127.0.0.1:" + port} {
		t.Run(noProxy, func(t *testing.T) {
			d := &Dialer{Proxy: Fixed(mustURL(t, "http://"+p.addr), noProxy)}
			c, err := d.DialContext(context.Background(), "tcp", target)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			roundTrip(t, c, "hi\n")
			if c.RemoteAddr().String() != target {
				t.Errorf("connected to %s, want %s directly", c.RemoteAddr(), target)
			}
		})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.requests) != 0 {
		t.Errorf("the proxy got %d requests, want none", len(p.requests))
	}
}

func TestDialRefused(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		wantCode     int
		wantMsg      string
	}{
		{name: "forbidden", answer: "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n", wantCode: 403,
			wantMsg: "refused CONNECT to 127.0.0.1:443: 403 Forbidden"},
		{name: "auth", answer: "HTTP/1.1 407 Proxy Authentication Required\r\n\r\n", wantCode: 407,
			wantMsg: "407 Proxy Authentication Required (put the proxy's credentials in its URL"},
		{name: "bad gateway", answer: "HTTP/1.0 502 Bad Gateway\r\n\r\n<html>", wantCode: 502, wantMsg: "502 Bad Gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startFakeProxy(t, &fakeProxy{answer: tc.answer})
			d := &Dialer{Proxy: Fixed(mustURL(t, "http://user:hunter2@"+p.addr), "")}
			c, err := d.DialContext(context.Background(), "tcp", "127.0.0.1:443")
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded, want a refusal")
			}
			var re *RefusedError
			if !errors.As(err, &re) || re.StatusCode != tc.wantCode {
				t.Fatalf("got %v, want a *RefusedError with %d", err, tc.wantCode)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("got %q, want it to say %q", err, tc.wantMsg)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error shows the proxy's password: %q", err)
			}
			p.waitClosed(t)
		})
	}
}

func TestDialMalformedAnswer(t *testing.T) {
	p := startFakeProxy(t, &fakeProxy{answer: "SSH-2.0-OpenSSH_9.2\r\n\r\n"})
	d := &Dialer{Proxy: Fixed(mustURL(t, "http://"+p.addr), "")}
	_, err := d.DialContext(context.Background(), "tcp", "127.0.0.1:443")
	if !errors.Is(err, errMalformed) {
		t.Fatalf("got %v, want a malformed answer", err)
	}
	p.waitClosed(t)
}

func TestDialTimesOut(t *testing.T) {
	p := startFakeProxy(t, &fakeProxy{silent: true})
	d := &Dialer{Proxy: Fixed(mustURL(t, "http://"+p.addr), ""), Timeout: shortWait}
	start := time.Now()
	_, err := d.DialContext(context.Background(), "tcp", "127.0.0.1:443")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a deadline error", err)
	}
	if took := time.Since(start); took > shortWait+2*time.Second {
		t.Errorf("gave up after %s, want about %s", took, shortWait)
	}
	if !strings.Contains(err.Error(), p.addr) {
		t.Errorf("the error does not name the proxy: %v", err)
	}
	p.waitClosed(t)
}

func TestDialCancelled(t *testing.T) {
	p := startFakeProxy(t, &fakeProxy{silent: true})
	d := &Dialer{Proxy: Fixed(mustURL(t, "http://"+p.addr), "")}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(shortWait, cancel)
	start := time.Now()
	_, err := d.DialContext(ctx, "tcp", "127.0.0.1:443")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > shortWait+2*time.Second {
		t.Errorf("returned %s after the cancel", took-shortWait)
	}
	p.waitClosed(t)
}

func TestDialProxyDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	d := &Dialer{Proxy: Fixed(mustURL(t, "http://u:pw@"+addr), "")}
	_, err = d.DialContext(context.Background(), "tcp", "127.0.0.1:443")
	if err == nil || !strings.Contains(err.Error(), "connect to proxy http://u:xxxxx@"+addr) {
		t.Fatalf("got %v, want an error naming the proxy, password hidden", err)
	}
}

func TestDialBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, proxy, network, addr string
	}{
		{name: "udp", proxy: "http://127.0.0.1:1", network: "udp", addr: "127.0.0.1:53"},
		{name: "socks", proxy: "socks5://127.0.0.1:1080", network: "tcp", addr: "h:443"},
		{name: "no host", proxy: "http://:3128", network: "tcp", addr: "h:443"},
		{name: "no port", proxy: "http://127.0.0.1:1", network: "tcp", addr: "h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Dialer{Proxy: Fixed(mustURL(t, tc.proxy), "")}
			c, err := d.DialContext(context.Background(), tc.network, tc.addr)
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded, want an error")
			}
		})
	}
}

func TestFixedNoProxy(t *testing.T) {
	proxyURL := mustURL(t, "http://proxy:3128")
	for _, tc := range []struct {
		noProxy, target string
		direct          bool
	}{
		{"", "https://127.0.0.1:443", false},
		{"", "https://localhost:443", false},
		{"*", "https://cp.example.com", true},
		{"127.0.0.1", "https://127.0.0.1:4222", true},
		{"127.0.0.1", "https://127.0.0.2:4222", false},
		{"127.0.0.1:4222", "https://127.0.0.1:4222", true},
		{"127.0.0.1:4222", "https://127.0.0.1:4223", false},
		{"10.0.0.0/8, 127.0.0.0/8", "https://127.9.9.9:1", true},
		{"10.0.0.0/8", "https://11.0.0.1:1", false},
		{"::1", "https://[::1]:443", true},
		{"[::1]:443", "https://[::1]:443", true},
		{"[::1]", "https://[::1]:443", true},
		{"::1", "https://[::2]:443", false},
		{"example.com", "https://example.com", true},
		{"example.com", "https://cp.example.com", true},
		{"example.com", "https://notexample.com", false},
		{".example.com", "https://example.com", false},
		{".example.com", "https://cp.example.com", true},
		{"*.example.com", "https://cp.example.com", true},
		{"*.example.com", "https://example.com", false},
		{"EXAMPLE.com", "https://CP.Example.COM", true},
		{"example.com:443", "https://example.com", true},
		{"example.com:443", "http://example.com", false},
		{"example.com:8443", "https://example.com:8443", true},
		{" a.com , example.com ", "https://example.com", true},
	} {
		t.Run(tc.noProxy+" "+tc.target, func(t *testing.T) {
			u := mustURL(t, tc.target)
			got, err := Fixed(proxyURL, tc.noProxy)(&http.Request{URL: u})
			if err != nil {
				t.Fatal(err)
			}
			if direct := got == nil; direct != tc.direct {
				t.Errorf("NO_PROXY=%q for %s: proxy %v, want direct=%v", tc.noProxy, tc.target, got, tc.direct)
			}
		})
	}
}

// The zero Dialer reads the environment as net/http does. The environment
// is read once per process, so this runs in a child process.
func TestDialerUsesEnvironment(t *testing.T) {
	if os.Getenv("OUTPOST_PROXY_ENV_CHILD") == "1" {
		d := &Dialer{}
		for _, tc := range []struct {
			addr string
			want string
		}{
			{"cp.example.com:443", "http://proxy.example:3128"},
			{"nats.internal.example:443", ""}, // NO_PROXY
			{"127.0.0.1:443", ""},             // loopback is never proxied from the environment
			{"localhost:443", ""},
		} {
			got, err := d.ProxyFor(tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			if s := urlString(got); s != tc.want {
				t.Errorf("%s: proxy %q, want %q", tc.addr, s, tc.want)
			}
		}
		d = &Dialer{Scheme: "http"}
		if got, _ := d.ProxyFor("cp.example.com:80"); urlString(got) != "http://plain.example:8080" {
			t.Errorf("scheme http: proxy %v, want HTTP_PROXY's", got)
		}
		return
	}
	runChild(t, "TestDialerUsesEnvironment", "HTTPS_PROXY=http://proxy.example:3128", "HTTP_PROXY=http://plain.example:8080",
		"NO_PROXY=.internal.example")
}

func urlString(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.String()
}
