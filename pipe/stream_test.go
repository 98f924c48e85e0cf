package pipe

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/wire"
)

// tcpPair is two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-acc
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// streamPair is two ends of a stream; closed counts each end's OnClose.
func streamPair(t *testing.T) (a, b *Stream, closed chan string) {
	t.Helper()
	ca, cb := tcpPair(t)
	closed = make(chan string, 2)
	a = NewStream(ca, StreamConfig{OnClose: func() { closed <- "a" }})
	b = NewStream(cb, StreamConfig{OnClose: func() { closed <- "b" }})
	return a, b, closed
}

// Bytes both ways, each side's half-close read as EOF after its bytes,
// the other side still sending; both Closes are clean.
func TestStreamHalfCloseBothWays(t *testing.T) {
	a, b, closed := streamPair(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB: many frames
	errs := make(chan error, 1)
	go func() {
		_, err := a.ReadFrom(bytes.NewReader(big)) // frames read straight from the source
		if err == nil {
			err = a.CloseWrite()
		}
		errs <- err
	}()
	got, err := io.ReadAll(b)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("b read %d of %d bytes, %v", len(got), len(big), err)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { a.WaitWriteDone(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WaitWriteDone after CloseWrite did not return")
	}
	// b, half-closed against, still sends.
	if _, err := b.Write([]byte("after your EOF")); err != nil {
		t.Fatal(err)
	}
	if err := b.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(a)
	if err != nil || string(back) != "after your EOF" {
		t.Fatalf("a read %q, %v", back, err)
	}
	a.Close()
	b.Close()
	for range 2 {
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("OnClose not called on both ends")
		}
	}
	if a.Err() != nil || b.Err() != nil {
		t.Fatalf("a clean end reset: %v / %v", a.Err(), b.Err())
	}
}

// A reset reaches the peer with its reason; writes fail after it.
func TestStreamReset(t *testing.T) {
	a, b, _ := streamPair(t)
	if _, err := a.Write([]byte("some")); err != nil {
		t.Fatal(err)
	}
	a.Reset(errors.New("policy changed"))
	buf := make([]byte, 16)
	n, _ := io.ReadFull(b, buf[:4])
	if string(buf[:n]) != "some" {
		t.Fatalf("read %q before the reset", buf[:n])
	}
	_, err := b.Read(buf)
	if !errors.Is(err, ErrReset) || !strings.Contains(err.Error(), "policy changed") {
		t.Fatalf("read after the peer's reset: %v, want ErrReset with its reason", err)
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, ErrReset) {
		t.Fatalf("write after the reset: %v", err)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, ErrReset) {
		t.Fatalf("write on the reset end: %v", err)
	}
}

// A reset while the sending side waits for its source (io.Copy into the
// stream, as the agent copies a local service) still reaches the peer
// with its reason: the wait does not hold the write lock.
func TestStreamResetWhileCopying(t *testing.T) {
	a, b, _ := streamPair(t)
	src, feed := io.Pipe()
	defer feed.Close()
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(a, src); copied <- err }()
	if _, err := feed.Write([]byte("some")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, _ := io.ReadFull(b, buf[:4]); string(buf[:n]) != "some" {
		t.Fatalf("read %q before the reset", buf[:n])
	}
	a.Reset(errors.New("policy changed")) // the copy is waiting in src.Read
	_, err := b.Read(buf)
	if !errors.Is(err, ErrReset) || !strings.Contains(err.Error(), "policy changed") {
		t.Fatalf("read after a reset during the copy: %v, want ErrReset with its reason", err)
	}
	feed.Close()
	<-copied
}

// Closing before the peer's EOF is a reset (as a TCP close with data
// unread); a connection that ends without an EOF is one too.
func TestStreamCloseEarlyAndCut(t *testing.T) {
	a, b, _ := streamPair(t)
	a.Close()
	if _, err := io.ReadAll(b); !errors.Is(err, ErrReset) {
		t.Fatalf("peer of an early Close read %v, want ErrReset", err)
	}

	ca, cb := tcpPair(t)
	s := NewStream(cb, StreamConfig{})
	var h [wire.StreamHeaderLen]byte
	wire.PutStreamHeader(h[:], wire.StreamData, 10)
	ca.Write(append(h[:], "12345"...)) // half a frame, then the end
	ca.Close()
	got, err := io.ReadAll(s)
	if !errors.Is(err, ErrReset) || string(got) != "12345" {
		t.Fatalf("a cut connection: read %q then %v, want the bytes then ErrReset", got, err)
	}

	ca, cb = tcpPair(t)
	s = NewStream(cb, StreamConfig{})
	ca.Write([]byte{'?', 0, 0, 0, 0}) // no such frame
	if _, err := io.ReadAll(s); !errors.Is(err, ErrReset) {
		t.Fatalf("a bad frame: %v, want ErrReset", err)
	}
}
