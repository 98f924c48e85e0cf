package websocket

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestServerStream: a StreamConn client and a ServerStream carry bytes
// both ways over TLS (writes larger than one frame, reads of any size),
// unmasked when the server agrees and masked when it does not; the
// client's close ends the server's reads with EOF, the server's Close ends
// the client's.
func TestServerStream(t *testing.T) {
	for _, agree := range []bool{true, false} {
		t.Run(map[bool]string{true: "unmasked", false: "masked"}[agree], func(t *testing.T) {
			streams := make(chan *ServerStream, 1)
			h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if !agree {
					r.Header.Del(UnmaskedHeader)
				}
				ws, err := AcceptStream(rw, r)
				if err != nil {
					t.Error(err)
					return
				}
				st, err := NewServerStream(ws, StreamOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				streams <- st
			})
			s := httptest.NewTLSServer(h)
			defer s.Close()
			dial := func() (*StreamConn, *ServerStream) {
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
				if c.unmasked != agree {
					t.Fatalf("unmasked = %v, want %v", c.unmasked, agree)
				}
				select {
				case st := <-streams:
					return c, st
				case <-time.After(10 * time.Second):
					t.Fatal("no stream")
				}
				return nil, nil
			}
			c, st := dial()
			defer c.Close()
			if _, ok := st.RemoteAddr().(*net.TCPAddr); !ok {
				t.Fatalf("RemoteAddr %v, want the client's TCP address", st.RemoteAddr())
			}
			up := make([]byte, 1<<20)
			_, _ = rand.Read(up)
			go func() {
				for p := up; len(p) > 0; {
					n := min(len(p), 70_000)
					if _, err := c.Write(p[:n]); err != nil {
						return
					}
					p = p[n:]
				}
			}()
			got := make([]byte, len(up))
			for off := 0; off < len(got); {
				// Small reads too: a frame's payload is read across them.
				n, err := st.Read(got[off:min(len(got), off+1+off%5000)])
				if err != nil {
					t.Fatalf("server read at %d: %v", off, err)
				}
				off += n
			}
			if !bytes.Equal(got, up) {
				t.Fatal("server read other bytes than the client wrote")
			}
			down := make([]byte, 600<<10) // more than one frame
			_, _ = rand.Read(down)
			go func() { _, _ = st.Write(down) }()
			if _, err := io.ReadFull(c, got[:len(down)]); err != nil || !bytes.Equal(got[:len(down)], down) {
				t.Fatalf("client read: %v", err)
			}
			// The client closes (a close frame, as its Close sends one
			// via the connection): the server reads EOF.
			if err := c.writeFrame(OpClose, []byte{0x03, 0xe8}); err != nil {
				t.Fatal(err)
			}
			if n, err := st.Read(got); err != io.EOF {
				t.Fatalf("server read after the client's close: %d, %v; want EOF", n, err)
			}
			// The server closes: the client reads EOF.
			c2, st2 := dial()
			defer c2.Close()
			if err := st2.Close(); err != nil {
				t.Fatal(err)
			}
			_ = st2.Close() // idempotent
			_ = c2.SetReadDeadline(time.Now().Add(10 * time.Second))
			if n, err := c2.Read(got); err != io.EOF {
				t.Fatalf("client read after the server's Close: %d, %v; want EOF", n, err)
			}
			if _, err := st2.Write([]byte("x")); err == nil {
				t.Fatal("a write after Close succeeded")
			}
		})
	}
}

// TestServerStreamAnswersPings: a ping between data frames is answered
// with a pong of the same payload, and the data around it reads as one
// stream.
func TestServerStreamAnswersPings(t *testing.T) {
	var in []byte
	in = appendFrame(in, OpBinary, []byte("PUB a 2\r\n"), true, [4]byte{1, 2, 3, 4})
	in = appendFrame(in, OpPing, []byte("hi"), true, [4]byte{5, 6, 7, 8})
	in = appendFrame(in, OpBinary, []byte("ok\r\n"), true, [4]byte{9, 9, 9, 9})
	t1 := &rwc{Reader: bytes.NewReader(in)}
	ws := newConn(t1, bufio.NewReaderSize(t1, 64), false)
	st, err := NewServerStream(ws, StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(st)
	if err != nil || string(b) != "PUB a 2\r\nok\r\n" {
		t.Fatalf("read %q, %v", b, err)
	}
	pong := appendFrame(nil, OpPong, []byte("hi"), false, [4]byte{})
	if !bytes.HasPrefix(t1.out.Bytes(), pong) {
		t.Fatalf("wrote %x, want a pong %x first", t1.out.Bytes(), pong)
	}
}

// FuzzServerStream: whatever a client sends, reading the stream neither
// panics nor hangs, and what it reads begins with the payloads of the
// binary messages a message reader accepts from the same bytes.
func FuzzServerStream(f *testing.F) {
	for _, tt := range frameTests {
		f.Add(tt.in)
	}
	f.Add(appendFrame(appendFrame(nil, OpBinary, []byte("PUB a 1\r\nx\r\n"), true, [4]byte{9, 8, 7, 6}), OpBinary, bytes.Repeat([]byte("y"), 5000), true, [4]byte{1}))
	f.Fuzz(func(t *testing.T, in []byte) {
		ref := newConn(&rwc{Reader: bytes.NewReader(in)}, bufio.NewReaderSize(bytes.NewReader(in), 16), false)
		var want bytes.Buffer
		for {
			op, p, err := ref.ReadMessage()
			if err != nil || op != OpBinary {
				break
			}
			want.Write(p)
		}
		ws := newConn(&rwc{Reader: bytes.NewReader(in)}, bufio.NewReaderSize(bytes.NewReader(in), 16), false)
		st, err := NewServerStream(ws, StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		buf := make([]byte, 7)
		for i := 0; i < len(in)+2; i++ { // each read takes at least a byte, or ends
			n, err := st.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if !bytes.HasPrefix(got.Bytes(), want.Bytes()) {
			t.Fatalf("read %q, want it to begin with %q", got.Bytes(), want.Bytes())
		}
	})
}
