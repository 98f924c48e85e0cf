package websocket

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// relayWorld is a WebSocket client whose server reads and writes a
// ServerStream as the embedded NATS server does (pump), to the far end of
// a TCP connection the test holds.
type relayWorld struct {
	client *Conn
	far    net.Conn      // the plain side's other end
	done   chan error    // pump's result
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
		ws, err := AcceptStream(rw, r)
		if err != nil {
			w.done <- err
			return
		}
		near, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			w.done <- err
			return
		}
		// A gather is counted when it starts, before its frame's bytes
		// go out: counted in done, after the write, it could be counted
		// after the peer read the frame and the test looked.
		opt := StreamOptions{Gather: func() func() error {
			w.gather <- struct{}{}
			return func() error { return nil }
		}}
		st, err := NewServerStream(ws, opt)
		if err != nil {
			w.done <- err
			return
		}
		go func() { w.done <- pump(st, near) }()
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

// pump is what the embedded NATS server does with a ServerStream: it
// writes what it reads from the stream to near and what near sends to the
// stream, until either ends; then it closes both and returns the stream's
// read error (nil at its end).
func pump(st *ServerStream, near net.Conn) error {
	out := make(chan struct{})
	go func() {
		defer close(out)
		_, _ = io.Copy(st, near)
		_ = st.Close()
	}()
	_, err := io.Copy(near, st)
	near.Close()
	_ = st.Close()
	<-out
	return err
}

func (w *relayWorld) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-w.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end")
		return nil
	}
}

func TestStreamCarriesBothWays(t *testing.T) {
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

func TestStreamAnswersPings(t *testing.T) {
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

func TestStreamEnds(t *testing.T) {
	t.Run("peer closes", func(t *testing.T) {
		w := startRelay(t, false)
		if err := w.client.CloseWith(CloseNormal, "bye", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := w.result(t); err != nil {
			t.Fatalf("pump = %v, want nil after a normal close", err)
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
			t.Fatalf("pump = %v, want nil after EOF", err)
		}
	})
	t.Run("peer vanishes", func(t *testing.T) {
		w := startRelay(t, false)
		w.client.shutdown()
		if err := w.result(t); err != nil {
			t.Fatalf("pump = %v, want nil when the peer's connection ends", err)
		}
		assertClosed(t, w.far)
	})
}

func TestStreamRefusesBadFrames(t *testing.T) {
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
				t.Fatal("pump = nil, want the protocol error")
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

// A write of up to relaySmall bytes goes out in one frame without
// gathering (which takes a 288 KiB buffer on the control plane's TLS
// connections); a larger one is gathered.
func TestStreamGathersOnlyLargeWrites(t *testing.T) {
	w := startRelay(t, true)
	send := func(n int) {
		t.Helper()
		p := make([]byte, n)
		_, _ = rand.Read(p)
		if _, err := w.far.Write(p); err != nil {
			t.Fatal(err)
		}
		var got []byte
		for len(got) < n {
			_, m, err := w.client.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m...)
		}
		if !bytes.Equal(got, p) {
			t.Fatalf("%d bytes: the peer got other bytes", n)
		}
	}
	for _, n := range []int{1, 100, 1500, relaySmall} {
		send(n)
	}
	if g := len(w.gather); g != 0 {
		t.Fatalf("writes of up to %d bytes were gathered %d times, want 0", relaySmall, g)
	}
	// One TCP segment on loopback: read by the pump in one piece, or in
	// pieces of which at least one is larger than relaySmall.
	send(20000)
	if len(w.gather) == 0 {
		t.Fatal("a 20,000-byte write was not gathered")
	}
}

// Around the threshold, and past relayLarge where the last frame is small
// or large, a ServerStream's write goes out as frames of relayLarge bytes
// and one of the rest, in order; only those of more than relaySmall are
// gathered, and each frame's buffer comes from the pool that fits it.
func TestStreamWriteFramesAroundThreshold(t *testing.T) {
	for _, n := range []int{0, 1, relaySmall, relaySmall + 1, relayLarge} {
		bp, pool := relayBuf(n)
		want, wantPool := relayHeadroom+relaySmall, &relaySmallBufs
		if n > relaySmall {
			want, wantPool = relayHeadroom+relayLarge, &relayBufs
		}
		if len(*bp) != want || pool != wantPool {
			t.Fatalf("relayBuf(%d): %d bytes, want %d from its pool", n, len(*bp), want)
		}
		pool.Put(bp)
	}

	_, br, st := rawStream(t, true)
	gathered := 0
	g := st.gather
	st.gather = func() func() error { gathered++; return g() }
	for _, n := range []int{0, 1, relaySmall - 1, relaySmall, relaySmall + 1, relayLarge,
		relayLarge + 1, relayLarge + relaySmall, relayLarge + relaySmall + 1, 3<<20 + 5} {
		p := make([]byte, n)
		_, _ = rand.Read(p)
		var frames, wantGathered []int
		for rest := n; rest > 0; rest -= min(rest, relayLarge) {
			frames = append(frames, min(rest, relayLarge))
			if frames[len(frames)-1] > relaySmall {
				wantGathered = append(wantGathered, frames[len(frames)-1])
			}
		}
		gathered = 0
		wrote := make(chan error, 1)
		go func() {
			m, err := st.Write(p)
			if err == nil && m != n {
				err = fmt.Errorf("wrote %d", m)
			}
			wrote <- err
		}()
		var got []byte
		for i, size := range frames {
			h, err := readHeader(br)
			if err != nil {
				t.Fatalf("write of %d: frame %d: %v", n, i, err)
			}
			if !h.fin || h.op != OpBinary || h.masked || h.length != int64(size) {
				t.Fatalf("write of %d: frame %d is %+v, want a final unmasked binary frame of %d", n, i, h, size)
			}
			f := make([]byte, size)
			if _, err := io.ReadFull(br, f); err != nil {
				t.Fatal(err)
			}
			got = append(got, f...)
		}
		if err := <-wrote; err != nil {
			t.Fatalf("write of %d: %v", n, err)
		}
		if !bytes.Equal(got, p) {
			t.Fatalf("write of %d: the peer got other bytes", n)
		}
		if gathered != len(wantGathered) {
			t.Fatalf("write of %d (frames %v): %d frames gathered, want %d", n, frames, gathered, len(wantGathered))
		}
	}
	// Nothing more than the frames above was written.
	st.Close()
	if h, err := readHeader(br); err != nil || h.op != OpClose {
		t.Fatalf("after the writes: %+v, %v; want the close frame", h, err)
	}
}
