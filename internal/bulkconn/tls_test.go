package bulkconn

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

func TestFrameHeader(t *testing.T) {
	tests := []struct {
		name string
		p    []byte
		want bool
	}{
		{"short length, masked", []byte{0x82, 0x80 | 5, 1, 2, 3, 4}, true},
		{"16-bit length", []byte{0x82, 0x80 | 126, 0x01, 0x00, 1, 2, 3, 4}, true},
		{"64-bit length", []byte{0x82, 0x80 | 127, 0, 0, 0, 0, 0, 0x20, 0, 0, 1, 2, 3, 4}, true},
		{"empty payload", []byte{0x8a, 0x80, 1, 2, 3, 4}, false},
		{"unmasked", []byte{0x82, 5, 1, 2, 3, 4}, false},
		{"header and payload", []byte{0x82, 0x80 | 2, 1, 2, 3, 4, 'h', 'i'}, false},
		{"16-bit length cut", []byte{0x82, 0x80 | 126, 0x01, 0x00, 1, 2}, false},
		{"64-bit, zero length", []byte{0x82, 0x80 | 127, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}, false},
		{"text", []byte("PING\r\n"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := frameHeader(tc.p); got != tc.want {
				t.Errorf("frameHeader(%x) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

// countingDialer dials TCP and counts the writes that reach its
// connections.
type countingDialer struct{ writes atomic.Int64 }

type countingConn struct {
	net.Conn
	d *countingDialer
}

func (c countingConn) Write(p []byte) (int, error) {
	c.d.writes.Add(1)
	return c.Conn.Write(p)
}

func (d *countingDialer) Dial(network, address string) (net.Conn, error) {
	c, err := net.Dial(network, address)
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, d: d}, nil
}

// A client's frame header goes out with its payload, a megabyte goes out
// in a few writes, a header left without its payload goes out after
// holdMax; the server reads every byte in order.
func TestDialerGathers(t *testing.T) {
	cert, pool := selfSigned(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	header := []byte{0x82, 0x80 | 6, 1, 2, 3, 4}
	// A payload that reads as a frame header: it is sent, not held.
	payload := []byte{0x82, 0x80 | 5, 9, 9, 9, 9}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	lone := []byte{0x82, 0x80 | 1, 5, 6, 7, 8}
	want := bytes.Join([][]byte{header, payload, big, lone}, nil)
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b := make([]byte, len(want))
		_, err = io.ReadFull(c, b)
		if err != nil {
			b = nil
		}
		got <- b
	}()
	inner := &countingDialer{}
	d := &Dialer{Inner: inner, Config: &tls.Config{RootCAs: pool}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	base := inner.writes.Load() // the handshake's
	if _, err := c.Write(header); err != nil {
		t.Fatal(err)
	}
	if n := inner.writes.Load() - base; n != 0 {
		t.Fatalf("a frame header alone went out (%d writes)", n)
	}
	if _, err := c.Write(payload); err != nil {
		t.Fatal(err)
	}
	if n := inner.writes.Load() - base; n != 1 {
		t.Fatalf("header and payload took %d writes, want 1", n)
	}
	if _, err := c.Write(big); err != nil {
		t.Fatal(err)
	}
	if n := inner.writes.Load() - base - 1; n > int64(len(big)/GatherMax+2) {
		t.Fatalf("%d writes for %d bytes", n, len(big))
	}
	// A header whose payload does not follow goes out on its own.
	if _, err := c.Write(lone); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if !bytes.Equal(b, want) {
			t.Fatalf("server read %d bytes, want %d equal", len(b), len(want))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server read nothing")
	}
	if Under(c) == nil {
		t.Error("Under(TLSConn) = nil")
	}
}

// selfSigned makes a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bulkconn test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
