package websocket

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// relayWorld is a WebSocket client whose server relays to the far end of
// a TCP connection the test holds (what the embedded NATS server is to the
// control plane's relay).
type relayWorld struct {
	client *Conn
	far    net.Conn      // the plain side's other end
	done   chan error    // Relay's result
	gather chan struct{} // one token per gathered frame
}

func startRelay(t *testing.T, tls bool) *relayWorld {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	w := &relayWorld{done: make(chan error, 1), gather: make(chan struct{}, 1<<16)}
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		ws, err := AcceptRelay(rw, r)
		if err != nil {
			w.done <- err
			return
		}
		near, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			w.done <- err
			return
		}
		opt := RelayOptions{Gather: func() func() error {
			return func() error { w.gather <- struct{}{}; return nil }
		}}
		go func() { w.done <- Relay(ws, near, opt) }()
	})
	var s *httptest.Server
	if tls {
		s = httptest.NewTLSServer(h)
	} else {
		s = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w.client, _, err = Dial(ctx, s.Client(), s.URL, nil)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { w.client.shutdown() })
	if w.far, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.far.Close() })
	return w
}

func (w *relayWorld) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-w.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Relay did not return")
		return nil
	}
}

func TestRelayCarriesBothWays(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[tls], func(t *testing.T) {
			w := startRelay(t, tls)
			// Peer → plain side: frames of every size class, split and
			// joined as a byte stream; what arrives is their payloads in
			// order.
			var sent bytes.Buffer
			for _, n := range []int{0, 1, 125, 126, 4095, relaySmall, relaySmall + 1, 70000, relayLarge + 3, 1 << 20} {
				p := make([]byte, n)
				_, _ = rand.Read(p)
				sent.Write(p)
				if err := w.client.WriteMessage(OpBinary, p); err != nil {
					t.Fatal(err)
				}
			}
			got := make([]byte, sent.Len())
			if _, err := io.ReadFull(w.far, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, sent.Bytes()) {
				t.Fatal("the plain side got other bytes than the frames' payloads")
			}
			// Plain side → peer: every byte, in binary messages.
			back := make([]byte, 3<<20)
			_, _ = rand.Read(back)
			go func() { _, _ = w.far.Write(back) }()
			var recv bytes.Buffer
			for recv.Len() < len(back) {
				op, p, err := w.client.ReadMessage()
				if err != nil {
					t.Fatalf("after %d bytes: %v", recv.Len(), err)
				}
				if op != OpBinary || len(p) == 0 || len(p) > relayLarge {
					t.Fatalf("message of opcode %d and %d bytes, want binary of 1..%d", op, len(p), relayLarge)
				}
				recv.Write(p)
			}
			if !bytes.Equal(recv.Bytes(), back) {
				t.Fatal("the peer got other bytes than the plain side wrote")
			}
			if len(w.gather) == 0 {
				t.Fatal("no frame went out through Gather")
			}
		})
	}
}

func TestRelayAnswersPings(t *testing.T) {
	w := startRelay(t, false)
	pong := make(chan string, 1)
	w.client.OnPong = func(p []byte) { pong <- string(p) }
	if err := w.client.Ping([]byte("are you there")); err != nil {
		t.Fatal(err)
	}
	// ReadMessage reads the pong (calling OnPong), then waits for data.
	read := make(chan error, 1)
	go func() { _, _, err := w.client.ReadMessage(); read <- err }()
	select {
	case p := <-pong:
		if p != "are you there" {
			t.Fatalf("pong %q", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no pong")
	}
	_, _ = w.far.Write([]byte("x"))
	if err := <-read; err != nil {
		t.Fatal(err)
	}
}

func TestRelayEnds(t *testing.T) {
	t.Run("peer closes", func(t *testing.T) {
		w := startRelay(t, false)
		if err := w.client.CloseWith(CloseNormal, "bye", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := w.result(t); err != nil {
			t.Fatalf("Relay = %v, want nil after a normal close", err)
		}
		assertClosed(t, w.far)
	})
	t.Run("plain side ends", func(t *testing.T) {
		w := startRelay(t, false)
		w.far.Close()
		_, _, err := w.client.ReadMessage()
		var ce *CloseError
		if !errors.As(err, &ce) || ce.Code != CloseGoingAway {
			t.Fatalf("peer read %v, want a close with %d", err, CloseGoingAway)
		}
		if err := w.result(t); err != nil {
			t.Fatalf("Relay = %v, want nil after EOF", err)
		}
	})
	t.Run("peer vanishes", func(t *testing.T) {
		w := startRelay(t, false)
		w.client.shutdown()
		if err := w.result(t); err != nil {
			t.Fatalf("Relay = %v, want nil when the peer's connection ends", err)
		}
		assertClosed(t, w.far)
	})
}

func TestRelayRefusesBadFrames(t *testing.T) {
	for _, tt := range []struct {
		name  string
		frame []byte
		code  int
	}{
		{"unmasked", appendFrame(nil, OpBinary, []byte("hi"), false, [4]byte{}), CloseProtocolError},
		{"text", appendFrame(nil, OpText, []byte("hi"), true, [4]byte{1}), CloseInvalidData},
		{"reserved bit", []byte{0xC2, 0x80, 0, 0, 0, 0}, CloseProtocolError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := startRelay(t, false)
			if _, err := w.client.rwc.Write(tt.frame); err != nil {
				t.Fatal(err)
			}
			_, _, err := w.client.ReadMessage()
			var ce *CloseError
			if !errors.As(err, &ce) || ce.Code != tt.code {
				t.Fatalf("peer read %v, want a close with %d", err, tt.code)
			}
			if err := w.result(t); err == nil {
				t.Fatal("Relay = nil, want the protocol error")
			}
			assertClosed(t, w.far)
		})
	}
}

// assertClosed fails unless c's peer closed it (a read ends at once).
func assertClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		t.Fatalf("plain side still open: read %d, %v", n, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// FuzzRelayIn: whatever a peer sends, the relay neither panics nor hangs,
// and what reaches the plain side begins with the payloads of the binary
// messages a message reader accepts from the same bytes.
func FuzzRelayIn(f *testing.F) {
	for _, tt := range frameTests {
		f.Add(tt.in)
	}
	f.Add(appendFrame(appendFrame(nil, OpBinary, []byte("PUB a 1\r\nx\r\n"), true, [4]byte{9, 8, 7, 6}), OpBinary, bytes.Repeat([]byte("y"), 5000), true, [4]byte{1}))
	f.Fuzz(func(t *testing.T, in []byte) {
		// Reference: unfragmented binary messages, read whole.
		ref := newConn(&rwc{Reader: bytes.NewReader(in)}, bufio.NewReaderSize(bytes.NewReader(in), 16), false)
		var want bytes.Buffer
		for {
			op, p, err := ref.ReadMessage()
			if err != nil || op != OpBinary {
				break
			}
			want.Write(p)
		}
		near, far := net.Pipe()
		got := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(far); got <- b }()
		ws := newConn(&rwc{Reader: bytes.NewReader(in)}, bufio.NewReaderSize(bytes.NewReader(in), 16), false)
		_ = relayIn(ws, near)
		near.Close()
		select {
		case b := <-got:
			if !bytes.HasPrefix(b, want.Bytes()) {
				t.Fatalf("plain side got %q, want it to begin with %q", b, want.Bytes())
			}
		case <-time.After(5 * time.Second):
			t.Fatal("relay did not end")
		}
	})
}

// TestStreamConnThroughRelay: a StreamConn client's bytes cross a relay
// both ways, unmasked when the relay agrees (it does) and masked when the
// server does not echo UnmaskedHeader (an older control plane).
func TestStreamConnThroughRelay(t *testing.T) {
	for _, agree := range []bool{true, false} {
		t.Run(map[bool]string{true: "unmasked", false: "masked"}[agree], func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			done := make(chan error, 1)
			h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/nats" {
					http.NotFound(rw, r)
					return
				}
				if !agree {
					r.Header.Del(UnmaskedHeader)
				}
				ws, err := AcceptRelay(rw, r)
				if err != nil {
					done <- err
					return
				}
				near, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					done <- err
					return
				}
				go func() { done <- Relay(ws, near, RelayOptions{}) }()
			})
			s := httptest.NewTLSServer(h)
			defer s.Close()
			raw, err := tls.Dial("tcp", s.Listener.Addr().String(), s.Client().Transport.(*http.Transport).TLSClientConfig)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := DialStream(ctx, raw, "example.test", "/v1/nats", nil)
			if err != nil {
				t.Fatalf("DialStream: %v", err)
			}
			defer c.Close()
			if c.unmasked != agree {
				t.Fatalf("unmasked = %v, want %v", c.unmasked, agree)
			}
			far, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer far.Close()
			up := make([]byte, 3<<20)
			_, _ = rand.Read(up)
			go func() {
				for p := up; len(p) > 0; {
					n := min(len(p), 100_000)
					if _, err := c.Write(p[:n]); err != nil {
						return
					}
					p = p[n:]
				}
			}()
			got := make([]byte, len(up))
			if _, err := io.ReadFull(far, got); err != nil || !bytes.Equal(got, up) {
				t.Fatalf("relayed upward: %v, equal %v", err, bytes.Equal(got, up))
			}
			down := make([]byte, 2<<20)
			_, _ = rand.Read(down)
			go func() { _, _ = far.Write(down) }()
			if _, err := io.ReadFull(c, got[:len(down)]); err != nil || !bytes.Equal(got[:len(down)], down) {
				t.Fatalf("relayed downward: %v", err)
			}
			far.Close() // the server's side ends: the stream reads EOF
			if n, err := c.Read(got); err != io.EOF {
				t.Fatalf("read after the far end closed: %d, %v; want EOF", n, err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Relay = %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Relay did not return")
			}
		})
	}
}
