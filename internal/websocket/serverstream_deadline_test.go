package websocket

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/outposthq/outpost/internal/bulkconn"
)

// bulkListener makes each accepted connection a bulkconn.Conn.
type bulkListener struct{ net.Listener }

func (l bulkListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return bulkconn.New(c), nil
}

// rawStream is a ServerStream over TLS on loopback and the client's raw
// TLS connection after the handshake, which the test writes frames to (or
// reads nothing from) by hand.
// With gather, the server's TLS runs over a bulkconn.Conn and the
// stream gathers each large frame's records on it, as the control plane's
// does.
func rawStream(t *testing.T, gather bool) (*tls.Conn, *bufio.Reader, *ServerStream) {
	t.Helper()
	streams := make(chan *ServerStream, 1)
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		ws, err := AcceptStream(rw, r)
		if err != nil {
			t.Error(err)
			return
		}
		var opt StreamOptions
		if gather {
			g := bulkconn.Under(ws.NetConn())
			if g == nil {
				t.Error("no bulkconn under the stream")
				return
			}
			opt.Gather = g.Gather
		}
		st, err := NewServerStream(ws, opt)
		if err != nil {
			t.Error(err)
			return
		}
		streams <- st
	}))
	if gather {
		s.Listener = bulkListener{s.Listener}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	c, err := tls.Dial("tcp", s.Listener.Addr().String(), s.Client().Transport.(*http.Transport).TLSClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /v1/nats HTTP/1.1\r\nHost: example.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	select {
	case st := <-streams:
		t.Cleanup(func() { st.Close() })
		return c, br, st
	case <-time.After(10 * time.Second):
		t.Fatal("no stream")
	}
	return nil, nil, nil
}

// TestServerStreamWriteDeadline: a write to a client that reads nothing
// ends at the write deadline with an error that is a net.Error reporting
// a timeout, as nats-server's flushOutbound checks it (err.(net.Error),
// not errors.As) to cut a slow consumer.
func TestServerStreamWriteDeadline(t *testing.T) {
	for _, gather := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "gathered"}[gather], func(t *testing.T) {
			testWriteDeadline(t, gather)
		})
	}
}

func testWriteDeadline(t *testing.T, gather bool) {
	_, _, st := rawStream(t, gather)
	_ = st.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err := st.Write(make([]byte, 64<<20))
		done <- err
	}()
	select {
	case err := <-done:
		ne, ok := err.(net.Error)
		if !ok || !ne.Timeout() {
			t.Fatalf("write past the deadline: %v (%T), want a net.Error timeout", err, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a write to a client that reads nothing outlived its deadline by 20 s")
	}
}

// TestServerStreamReadDeadline: a read that times out leaves the stream
// readable, as a net.Conn's does (nats-server reads the first bytes of a
// client under a deadline to tell TLS from plain text, then goes on
// reading whatever came): before a frame, and inside one.
func TestServerStreamReadDeadline(t *testing.T) {
	c, _, st := rawStream(t, false)
	key := [4]byte{7, 1, 2, 3}
	frame := appendFrame(nil, OpBinary, []byte("CONNECT {}\r\n"), true, key)
	buf := make([]byte, 64)

	// Before any frame.
	_ = st.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := st.Read(buf); !isTimeout(err) {
		t.Fatalf("read with nothing sent: %d, %v; want a timeout", n, err)
	}
	// Part of a header, then the deadline.
	if _, err := c.Write(frame[:1]); err != nil {
		t.Fatal(err)
	}
	_ = st.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := st.Read(buf); !isTimeout(err) {
		t.Fatalf("read of half a header: %d, %v; want a timeout", n, err)
	}
	// The rest of the header and part of the payload.
	if _, err := c.Write(frame[1:10]); err != nil {
		t.Fatal(err)
	}
	_ = st.SetReadDeadline(time.Time{})
	var got []byte
	for len(got) < 4 {
		n, err := st.Read(buf)
		if err != nil {
			t.Fatalf("read after a timeout: %v", err)
		}
		got = append(got, buf[:n]...)
	}
	// Inside the payload, then the deadline.
	_ = st.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := st.Read(buf); !isTimeout(err) {
		t.Fatalf("read inside a frame: %d, %v; want a timeout", n, err)
	}
	_ = st.SetReadDeadline(time.Time{})
	if _, err := c.Write(frame[10:]); err != nil {
		t.Fatal(err)
	}
	for len(got) < len("CONNECT {}\r\n") {
		n, err := st.Read(buf)
		if err != nil {
			t.Fatalf("read after a timeout inside a frame: %v", err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != "CONNECT {}\r\n" {
		t.Fatalf("read %q", got)
	}
}

// TestServerStreamReadAllocs: reading a frame that is already buffered
// allocates nothing. Every agent's NATS traffic over wss is read this way
// by the embedded server, thousands of frames a second at 10,000 agents.
func TestServerStreamReadAllocs(t *testing.T) {
	c, _, st := rawStream(t, false)
	key := [4]byte{7, 1, 2, 3}
	const frames = 200
	var all []byte
	for range frames {
		all = appendFrame(all, OpBinary, []byte("PING\r\n"), true, key)
	}
	if _, err := c.Write(all); err != nil { // one TLS record
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	read := func() { // one frame's payload, in as many reads as it takes
		got := 0
		for got < len("PING\r\n") {
			n, err := st.Read(buf[got:len("PING\r\n")])
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			got += n
		}
		if string(buf[:got]) != "PING\r\n" {
			t.Fatalf("read %q", buf[:got])
		}
	}
	read() // the record's read allocates in crypto/tls
	if n := testing.AllocsPerRun(frames-2, read); n != 0 {
		t.Fatalf("%v allocations a frame, want 0", n)
	}
}
