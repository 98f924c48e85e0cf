package agent_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/internal/natstest"
	"github.com/outposthq/outpost/internal/tinyproxy"
	"github.com/outposthq/outpost/proxy"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

func TestNATSProxyOption(t *testing.T) {
	proxyURL := &url.URL{Scheme: "http", Host: "proxy.example:3128"}
	for _, tc := range []struct {
		name       string
		servers    []string
		noProxy    string
		wantDialer bool
		wantAsked  string // the URL the proxy is chosen for
	}{
		{name: "wss", servers: []string{"wss://cp.example.com/v1/nats"}, wantDialer: true, wantAsked: "https://cp.example.com:443"},
		{name: "ws", servers: []string{"ws://cp.example.com/v1/nats"}, wantDialer: true, wantAsked: "http://cp.example.com:80"},
		{name: "nats", servers: []string{"nats://cp.example.com"}, wantDialer: true, wantAsked: "https://cp.example.com:4222"},
		{name: "tls with port", servers: []string{"tls://cp.example.com:7422"}, wantDialer: true, wantAsked: "https://cp.example.com:7422"},
		{name: "no proxy for it", servers: []string{"wss://cp.example.com"}, noProxy: "example.com", wantAsked: "https://cp.example.com:443"},
		{name: "one of two proxied", servers: []string{"nats://a.internal:4222", "nats://cp.example.com:4222"}, noProxy: ".internal",
			wantDialer: true, wantAsked: "https://cp.example.com:4222"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked string
			fixed := proxy.Fixed(proxyURL, tc.noProxy)
			pick := func(req *http.Request) (*url.URL, error) {
				asked = req.URL.String()
				return fixed(req)
			}
			o := nats.GetDefaultOptions()
			if err := agent.NATSProxy(pick, tc.servers)(&o); err != nil {
				t.Fatal(err)
			}
			if got := o.CustomDialer != nil; got != tc.wantDialer {
				t.Errorf("custom dialer set: %v, want %v", got, tc.wantDialer)
			}
			if o.SkipHostLookup != tc.wantDialer {
				t.Errorf("SkipHostLookup %v, want %v: the proxy resolves names", o.SkipHostLookup, tc.wantDialer)
			}
			if asked != tc.wantAsked {
				t.Errorf("proxy chosen for %q, want %q", asked, tc.wantAsked)
			}
		})
	}
}

// The agent serves through a real forward proxy, and reconnects through it
// after the server restarts.
func TestServesThroughProxy(t *testing.T) {
	w := newWorld(t)
	p := tinyproxy.Start(t, tinyproxy.Options{})
	natsAddr := w.auth.Server.Addr().String()
	r := w.start(t, agent.Config{NATSOptions: []nats.Option{
		agent.NATSProxy(proxy.Fixed(p.URL, ""), w.ident.NATSURLs),
	}})
	w.waitOnline(t, r.a.Instance())
	res, err := w.exec(t, &wire.ExecRequest{Argv: []string{"echo", "through the proxy"}}, rpc.CallOptions{})
	if err != nil || string(res.Stdout) != "through the proxy\n" {
		t.Fatalf("exec: %q %v", res.Stdout, err)
	}
	if n := p.Count("CONNECT", natsAddr); n != 1 {
		t.Fatalf("tinyproxy logged %d CONNECTs to %s, want 1; requests %q", n, natsAddr, p.Requests())
	}

	w.auth.Restart(t)
	waitUntil(t, "exec after the reconnect", func() bool {
		res, err := w.exec(t, &wire.ExecRequest{Argv: []string{"echo", "again"}}, rpc.CallOptions{Timeout: 2 * time.Second})
		if we := wire.AsError(err); err != nil && we.Code != wire.CodeUnavailable && we.Code != wire.CodeDeadlineExceeded {
			t.Fatalf("exec during the outage: %v, want unavailable", err)
		}
		return err == nil && string(res.Stdout) == "again\n"
	})
	if n := p.Count("CONNECT", natsAddr); n < 2 {
		t.Fatalf("tinyproxy logged %d CONNECTs to %s, want the reconnect's too; requests %q", n, natsAddr, p.Requests())
	}
}

// A proxy that allows CONNECT to 443 only refuses the NATS port, and the
// agent says so in its log.
func TestProxyRefusalIsLogged(t *testing.T) {
	w := newWorld(t)
	p := tinyproxy.Start(t, tinyproxy.Options{ConnectPorts: []int{443}})
	natsAddr := w.auth.Server.Addr().String()
	var log syncBuffer
	r := w.start(t, agent.Config{
		Logger:      slog.New(slog.NewTextHandler(&log, nil)),
		NATSOptions: []nats.Option{agent.NATSProxy(proxy.Fixed(p.URL, ""), w.ident.NATSURLs)},
	})
	want := "proxy " + p.URL.String() + " refused CONNECT to " + natsAddr + ": 403 "
	waitUntil(t, "the refusal in the agent's log", func() bool { return strings.Contains(log.String(), want) })
	if err := r.stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	ctx := tctx(t)
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// nats.go speaks WebSocket, and TLS for wss://, inside the tunnel: the
// agent's connection to the control plane's one HTTPS port through a proxy.
func TestNATSOverWebSocketThroughProxy(t *testing.T) {
	for _, secure := range []bool{false, true} {
		name := "ws"
		if secure {
			name = "wss"
		}
		t.Run(name, func(t *testing.T) {
			serverTLS, clientTLS := selfSignedTLS(t)
			s := natstest.Start(t, func(o *server.Options) {
				o.JetStream = false
				o.Websocket = server.WebsocketOpts{Host: "127.0.0.1", Port: -1, NoTLS: !secure}
				if secure {
					o.Websocket.TLSConfig = serverTLS
				}
			})
			wsURL := s.WebsocketURL()
			if !strings.HasPrefix(wsURL, name+"://") || strings.HasSuffix(wsURL, ":-1") {
				t.Fatalf("websocket url %q", wsURL)
			}
			p := tinyproxy.Start(t, tinyproxy.Options{})
			opts := []nats.Option{agent.NATSProxy(proxy.Fixed(p.URL, ""), []string{wsURL}), nats.NoReconnect()}
			if secure {
				opts = append(opts, nats.Secure(clientTLS))
			}
			nc, err := nats.Connect(wsURL, opts...)
			if err != nil {
				t.Fatalf("connect to %s through the proxy: %v", wsURL, err)
			}
			defer nc.Close()
			if _, err := nc.Subscribe("echo", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
				t.Fatal(err)
			}
			msg, err := nc.Request("echo", []byte("over "+name), 5*time.Second)
			if err != nil || string(msg.Data) != "over "+name {
				t.Fatalf("request: %v %v", msg, err)
			}
			if _, err := nc.TLSConnectionState(); (err == nil) != secure {
				t.Errorf("TLS state: %v, want TLS %v", err, secure)
			}
			wsAddr := strings.TrimPrefix(wsURL, name+"://")
			if n := p.Count("CONNECT", wsAddr); n != 1 {
				t.Errorf("tinyproxy logged %d CONNECTs to %s, want 1; requests %q", n, wsAddr, p.Requests())
			}
		})
	}
}

// selfSignedTLS is a server certificate for 127.0.0.1 and a client config
// that trusts only it.
func selfSignedTLS(t *testing.T) (serverTLS, clientTLS *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "outpost test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12},
		&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
