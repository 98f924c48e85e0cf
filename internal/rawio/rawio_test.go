package rawio

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/outposthq/outpost/internal/bulkconn"
)

// tcpPair is a connected pair of loopback TCP connections.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestConn: a wrapped connection carries small and large writes both ways
// in order, reports the peer's half-close as io.EOF, times out at its
// deadline (a net.Error whose Timeout is true, as the connection's own),
// and a read waiting on the poller ends when the connection is closed.
func TestConn(t *testing.T) {
	a, b := tcpPair(t)
	ra := Conn(a)
	if runtime.GOOS == "linux" && ra == a {
		t.Fatal("Conn of a *net.TCPConn is not wrapped on Linux")
	}
	small, large := []byte("k"), bytes.Repeat([]byte("0123456789abcdef"), (Max+Max/2)/16)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, len(small)+len(large))
		_, err := io.ReadFull(b, buf)
		if err == nil && (!bytes.Equal(buf[:1], small) || !bytes.Equal(buf[1:], large)) {
			err = errors.New("bytes differ")
		}
		if err == nil {
			_, err = b.Write(append([]byte("echo"), large...))
		}
		if err == nil {
			err = b.(*net.TCPConn).CloseWrite()
		}
		done <- err
	}()
	if _, err := ra.Write(small); err != nil {
		t.Fatal(err)
	}
	if n, err := ra.Write(large); err != nil || n != len(large) {
		t.Fatalf("large write: %d, %v", n, err)
	}
	got, err := io.ReadAll(ra) // small reads (4 KiB, then growing) up to the EOF
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, append([]byte("echo"), large...)) {
		t.Fatalf("read %d bytes, not what was written", len(got))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, err := ra.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("read after the peer's FIN: %d, %v; want 0, io.EOF", n, err)
	}

	c, d := tcpPair(t)
	rc := Conn(c)
	_ = rc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err = rc.Read(make([]byte, 8))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v; want a timeout", err)
	}
	_ = rc.SetReadDeadline(time.Time{})
	if _, err := d.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if n, err := rc.Read(make([]byte, 8)); n != 1 || err != nil {
		t.Fatalf("read after a timeout: %d, %v; the connection goes on", n, err)
	}
	ended := make(chan error, 1)
	go func() { _, err := rc.Read(make([]byte, 8)); ended <- err }()
	time.Sleep(20 * time.Millisecond)
	rc.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read ended by Close: %v; want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read waiting on the poller did not end when the connection closed")
	}
	if _, err := rc.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after Close: %v; want net.ErrClosed", err)
	}
}

// TestConnFull: a write larger than the socket takes waits on the poller
// for the peer to read, then completes: every byte, in order.
func TestConnFull(t *testing.T) {
	a, b := tcpPair(t)
	_ = a.(*net.TCPConn).SetWriteBuffer(4 << 10)
	_ = b.(*net.TCPConn).SetReadBuffer(4 << 10)
	ra := Conn(a)
	want := bytes.Repeat([]byte("abcdefgh"), Max/8) // Max: one direct write's worth
	got := make(chan []byte, 1)
	go func() {
		time.Sleep(100 * time.Millisecond) // the writer finds the socket full first
		buf, _ := io.ReadAll(io.LimitReader(b, int64(len(want))))
		got <- buf
	}()
	if n, err := ra.Write(want); err != nil || n != len(want) {
		t.Fatalf("write: %d, %v", n, err)
	}
	if !bytes.Equal(<-got, want) {
		t.Fatal("the peer read other bytes")
	}
}

// TestWrapTLS: Wrap of a TLS connection over a bulkconn.Conn makes the
// TCP connection under it direct, in place, and TLS goes on over it.
func TestWrapTLS(t *testing.T) {
	a, b := tcpPair(t)
	cert, pool := selfSigned(t)
	srv := tls.Server(b, &tls.Config{Certificates: []tls.Certificate{cert}})
	cl := tls.Client(bulkconn.New(a), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 5)
		_, err := io.ReadFull(srv, buf)
		if err == nil {
			_, err = srv.Write(append(buf, '!'))
		}
		errc <- err
	}()
	if err := cl.Handshake(); err != nil {
		t.Fatal(err)
	}
	if w := Wrap(cl); w != net.Conn(cl) {
		t.Fatal("Wrap of a TLS connection returned another connection")
	}
	under := bulkconn.Under(cl).Conn
	if _, plain := under.(*net.TCPConn); runtime.GOOS == "linux" && plain {
		t.Fatal("the TCP connection under TLS is not wrapped")
	}
	if _, err := cl.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(cl, buf); err != nil || string(buf) != "hello!" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestFile: File of a non-blocking pipe end (os.Pipe's, on the poller)
// reads and writes it, reports EOF when the writer closed, and leaves a
// blocking file as it is.
func TestFile(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rf, wf := File(r), File(w)
	if runtime.GOOS == "linux" && (rf == io.ReadWriter(r) || wf == io.ReadWriter(w)) {
		t.Fatal("File of os.Pipe's ends is not wrapped on Linux")
	}
	go func() {
		time.Sleep(20 * time.Millisecond) // the reader waits on the poller first
		_, _ = wf.Write([]byte("typed"))
		w.Close()
	}()
	got, err := io.ReadAll(rf)
	if err != nil || string(got) != "typed" {
		t.Fatalf("read %q, %v", got, err)
	}

	f, err := os.CreateTemp(t.TempDir(), "blocking")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if File(f) != io.ReadWriter(f) {
		t.Fatal("File of a blocking file is not the file itself")
	}
	nb, err := os.OpenFile(f.Name(), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	if File(nb) != io.ReadWriter(nb) {
		t.Fatal("File of a regular file opened non-blocking is not the file itself")
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
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rawio test"},
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
