package websocket

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoServer echoes every message until the client closes.
func echoServer(t testing.TB, tls bool) *httptest.Server {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			op, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			if string(p) == "close please" {
				_ = c.CloseWith(4000, "as asked", time.Second)
				return
			}
			if err := c.WriteMessage(op, p); err != nil {
				return
			}
		}
	})
	var s *httptest.Server
	if tls {
		s = httptest.NewUnstartedServer(h)
		s.EnableHTTP2 = true // the client must still get HTTP/1.1 for the upgrade
		s.StartTLS()
	} else {
		s = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

func TestRoundTrip(t *testing.T) {
	for _, tls := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "tls"}[tls]
		t.Run(name, func(t *testing.T) {
			s := echoServer(t, tls)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, _, err := Dial(ctx, s.Client(), s.URL, http.Header{"X-Test": {"1"}})
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer c.Close()
			pongs := make(chan string, 1)
			c.OnPong = func(p []byte) { pongs <- string(p) }
			msgs := []struct {
				op Opcode
				p  []byte
			}{
				{OpText, []byte("hello")},
				{OpBinary, []byte{0, 1, 2, 255}},
				{OpBinary, bytes.Repeat([]byte("x"), 126)},
				{OpBinary, bytes.Repeat([]byte("y"), 70000)},
				{OpText, []byte("")},
			}
			for _, m := range msgs {
				if err := c.WriteMessage(m.op, m.p); err != nil {
					t.Fatal(err)
				}
				op, p, err := c.ReadMessage()
				if err != nil || op != m.op || !bytes.Equal(p, m.p) {
					t.Fatalf("echo of %d bytes op %d: got %d bytes op %d, %v", len(m.p), m.op, len(p), op, err)
				}
			}
			if err := c.Ping([]byte("are you there")); err != nil {
				t.Fatal(err)
			}
			// The pong arrives while reading; the echo after it ends the read.
			if err := c.WriteMessage(OpText, []byte("after ping")); err != nil {
				t.Fatal(err)
			}
			if _, p, err := c.ReadMessage(); err != nil || string(p) != "after ping" {
				t.Fatalf("read after ping: %q, %v", p, err)
			}
			if got := <-pongs; got != "are you there" {
				t.Fatalf("pong %q", got)
			}
			if err := c.WriteMessage(OpText, []byte("close please")); err != nil {
				t.Fatal(err)
			}
			_, _, err = c.ReadMessage()
			var ce *CloseError
			if !errors.As(err, &ce) || ce.Code != 4000 || ce.Reason != "as asked" {
				t.Fatalf("read after close: %v, want close 4000", err)
			}
			if err := c.WriteMessage(OpText, []byte("late")); !errors.Is(err, ErrClosed) {
				t.Fatalf("write after close: %v, want ErrClosed", err)
			}
		})
	}
}

func TestDialRefused(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"nope"}`, http.StatusUnauthorized)
	}))
	defer s.Close()
	_, resp, err := Dial(context.Background(), nil, s.URL, nil)
	if !errors.Is(err, ErrNotUpgraded) || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("Dial: %v, %v; want ErrNotUpgraded with the 401", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "nope") {
		t.Fatalf("body %q", body)
	}
}

func TestAcceptRefuses(t *testing.T) {
	s := echoServer(t, false)
	tests := []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no upgrade", map[string]string{}, http.StatusUpgradeRequired},
		{"old version", map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "8", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}, http.StatusUpgradeRequired},
		{"bad key", map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "short"}, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", s.URL, nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

func TestAcceptKey(t *testing.T) {
	// RFC 6455 section 1.3's example.
	if got := acceptKey("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("acceptKey = %q", got)
	}
}

// rwc is an in-memory connection: reads from in, writes to out.
type rwc struct {
	io.Reader
	out bytes.Buffer
}

func (c *rwc) Write(p []byte) (int, error) { return c.out.Write(p) }
func (c *rwc) Close() error                { return nil }

// frameTests are received byte streams (as a server reads them) and what
// reading them gives; they seed FuzzReadMessage.
var frameTests = []struct {
	name    string
	in      []byte
	want    string // the first message, or "" for an error
	wantErr error
}{
	{"masked text", appendFrame(nil, OpText, []byte("hi"), true, [4]byte{1, 2, 3, 4}), "hi", nil},
	{"fragmented", append([]byte{0x01, 0x82, 0, 0, 0, 0, 'a', 'b'}, 0x80, 0x81, 9, 9, 9, 9, 'c'^9), "abc", nil},
	{"ping between fragments", append(append([]byte{0x01, 0x81, 0, 0, 0, 0, 'a'}, appendFrame(nil, OpPing, []byte("p"), true, [4]byte{})...), 0x80, 0x81, 0, 0, 0, 0, 'b'), "ab", nil},
	{"16-bit length", appendFrame(nil, OpBinary, bytes.Repeat([]byte{7}, 300), true, [4]byte{5}), strings.Repeat("\x07", 300), nil},
	{"unmasked from a client", appendFrame(nil, OpText, []byte("hi"), false, [4]byte{}), "", ErrProtocol},
	{"reserved bit", []byte{0xC1, 0x80, 0, 0, 0, 0}, "", ErrProtocol},
	{"unknown opcode", []byte{0x83, 0x80, 0, 0, 0, 0}, "", ErrProtocol},
	{"fragmented ping", []byte{0x09, 0x80, 0, 0, 0, 0}, "", ErrProtocol},
	{"long ping", append([]byte{0x89, 0xFE, 0, 126, 0, 0, 0, 0}, make([]byte, 126)...), "", ErrProtocol},
	{"continuation first", []byte{0x80, 0x80, 0, 0, 0, 0}, "", ErrProtocol},
	{"non-minimal length", append([]byte{0x82, 0xFE, 0, 5, 0, 0, 0, 0}, make([]byte, 5)...), "", ErrProtocol},
	{"top bit length", []byte{0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "", ErrProtocol},
	{"one-byte close", []byte{0x88, 0x81, 0, 0, 0, 0, 3}, "", ErrProtocol},
	{"truncated", []byte{0x82, 0x85, 0, 0, 0, 0, 1, 2}, "", io.ErrUnexpectedEOF},
	{"text not utf-8", []byte{0x81, 0x81, 0, 0, 0, 0, 0xff}, "", nil},
	{"close", appendFrame(nil, OpClose, []byte{0x03, 0xe8}, true, [4]byte{}), "", nil},
}

func TestReadMessageFrames(t *testing.T) {
	for _, tt := range frameTests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConn(&rwc{Reader: bytes.NewReader(tt.in)}, nil, false)
			_, p, err := c.ReadMessage()
			switch {
			case tt.want != "":
				if err != nil || string(p) != tt.want {
					t.Fatalf("got %q, %v; want %q", p, err, tt.want)
				}
			case err == nil:
				t.Fatalf("got %q, want an error", p)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// FuzzReadMessage: no input makes the decoder panic, loop or accept a
// message over the limit; each side reads its peer's frames.
func FuzzReadMessage(f *testing.F) {
	for _, tt := range frameTests {
		f.Add(tt.in, false)
		f.Add(tt.in, true)
	}
	f.Fuzz(func(t *testing.T, in []byte, client bool) {
		c := newConn(&rwc{Reader: bytes.NewReader(in)}, bufio.NewReaderSize(bytes.NewReader(in), 16), client)
		c.MaxMessage = 1 << 12
		for range len(in) + 1 {
			_, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			if len(p) > c.MaxMessage {
				t.Fatalf("message of %d bytes over the limit", len(p))
			}
		}
		t.Fatalf("more messages than input bytes")
	})
}

// Splice reuses one buffer for the messages it reads: messages large,
// small, fragmented and large again reach the connection intact, in
// order, and the peer's EOF half-closes it.
func TestSpliceMessagesIntact(t *testing.T) {
	got := make(chan []byte, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := Accept(w, r)
		if err != nil {
			return
		}
		sink := &halfCloseBuffer{done: make(chan struct{})}
		go func() { <-sink.done; got <- sink.buf.Bytes() }()
		_ = Splice(ws, sink)
	})
	s := httptest.NewServer(h)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := Dial(ctx, s.Client(), s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var want []byte
	for i, n := range []int{200000, 3, 70000, 0, 1, 150000, 5} {
		p := bytes.Repeat([]byte{byte('a' + i)}, n)
		want = append(want, p...)
		if err := c.WriteMessage(OpBinary, p); err != nil {
			t.Fatal(err)
		}
	}
	// One message in three fragments, shorter than the buffer now holds.
	key := [4]byte{1, 2, 3, 4}
	frag := appendFragment(nil, OpBinary, false, []byte("xyz"), key)
	frag = appendFragment(frag, OpContinuation, false, []byte("XYZ"), key)
	frag = appendFragment(frag, OpContinuation, true, []byte("!"), key)
	want = append(want, "xyzXYZ!"...)
	c.wmu.Lock()
	_, err = c.rwc.Write(frag)
	c.wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMessage(OpText, []byte(EOFMessage)); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if !bytes.Equal(b, want) {
			t.Fatalf("spliced %d bytes, want %d (or they differ)", len(b), len(want))
		}
	case <-ctx.Done():
		t.Fatal("no EOF at the connection")
	}
}

// appendFragment appends one masked frame, final or not.
func appendFragment(dst []byte, op Opcode, fin bool, p []byte, key [4]byte) []byte {
	b0 := byte(op)
	if fin {
		b0 |= 0x80
	}
	dst = append(dst, b0)
	dst = appendLength(dst, len(p), true)
	dst = append(dst, key[:]...)
	start := len(dst)
	dst = append(dst, p...)
	maskBytes(key, 0, dst[start:])
	return dst
}

// halfCloseBuffer collects what is written until CloseWrite; it reads
// nothing (a reader that ends at once).
type halfCloseBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
	once sync.Once
}

func (b *halfCloseBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *halfCloseBuffer) Read([]byte) (int, error) { <-b.done; return 0, io.EOF }
func (b *halfCloseBuffer) CloseWrite() error        { b.once.Do(func() { close(b.done) }); return nil }
func (b *halfCloseBuffer) Close() error             { return b.CloseWrite() }

// maskBytes is the byte-by-byte XOR of RFC 6455 5.3 at every length and
// starting offset, the word-at-a-time part included.
func TestMaskBytes(t *testing.T) {
	key := [4]byte{0x12, 0x34, 0x56, 0x78}
	for n := 0; n < 70; n++ {
		for pos := 0; pos < 4; pos++ {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(i * 7)
			}
			want := bytes.Clone(p)
			for i := range want {
				want[i] ^= key[(pos+i)&3]
			}
			if end := maskBytes(key, pos, p); end != (pos+n)&3 || !bytes.Equal(p, want) {
				t.Fatalf("n %d pos %d: %x (end %d), want %x", n, pos, p, end, want)
			}
		}
	}
}

// countingRWC counts the writes to it.
type countingRWC struct {
	rwc
	writes int
}

func (c *countingRWC) Write(p []byte) (int, error) { c.writes++; return c.rwc.Write(p) }

// TestWriteMessages: the messages arrive intact and in order, from a
// client (masked) and a server; small ones in one write, a batch with a
// large one as WriteMessage would send each.
func TestWriteMessages(t *testing.T) {
	small := []Message{{OpBinary, []byte("k")}, {OpText, []byte(`{"type":"seq","seq":7}`)}, {OpBinary, nil}}
	large := []Message{{OpBinary, []byte("a")}, {OpBinary, bytes.Repeat([]byte("z"), directWrite+1)}, {OpText, []byte("end")}}
	for _, client := range []bool{false, true} {
		// With a large one, the writes of WriteMessage, each.
		each := &countingRWC{}
		ce := newConn(each, bufio.NewReader(bytes.NewReader(nil)), client)
		for _, m := range large {
			if err := ce.WriteMessage(m.Op, m.Data); err != nil {
				t.Fatal(err)
			}
		}
		for _, tt := range []struct {
			name   string
			msgs   []Message
			writes int
		}{{"small", small, 1}, {"with a large one", large, each.writes}} {
			w := &countingRWC{}
			c := newConn(w, bufio.NewReader(bytes.NewReader(nil)), client)
			if err := c.WriteMessages(tt.msgs...); err != nil {
				t.Fatal(err)
			}
			if w.writes != tt.writes {
				t.Errorf("client %v, %s: %d writes, want %d", client, tt.name, w.writes, tt.writes)
			}
			r := newConn(&rwc{Reader: &w.out}, nil, !client)
			for i, m := range tt.msgs {
				op, p, err := r.ReadMessage()
				if err != nil || op != m.Op || !bytes.Equal(p, m.Data) {
					t.Fatalf("client %v, %s: message %d: op %d, %d bytes, %v; want op %d, %d bytes", client, tt.name, i, op, len(p), err, m.Op, len(m.Data))
				}
			}
		}
	}
	c := newConn(&countingRWC{}, bufio.NewReader(bytes.NewReader(nil)), false)
	if err := c.WriteMessages(Message{OpPing, nil}); err == nil {
		t.Fatal("WriteMessages of a ping: no error")
	}
	_ = c.Close()
	if err := c.WriteMessages(small...); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v, want ErrClosed", err)
	}
}

// TestReadHeaderAllocatesNothing: a frame's header is read without an
// allocation (each keystroke of a terminal is a frame at every hop).
func TestReadHeaderAllocatesNothing(t *testing.T) {
	frame := appendFrame(nil, OpBinary, []byte("k"), true, [4]byte{1, 2, 3, 4})
	r := bytes.NewReader(frame)
	br := bufio.NewReader(r)
	if n := testing.AllocsPerRun(200, func() {
		r.Reset(frame)
		br.Reset(r)
		h, err := readHeader(br)
		if err != nil || h.length != 1 || !h.masked {
			t.Fatalf("header %+v, %v", h, err)
		}
	}); n != 0 {
		t.Errorf("%v allocations a header, want 0", n)
	}
}

// TestReadMessageIntoAllocatesNothing: a small message read into the
// reader's buffer allocates nothing, and its bytes are the message's.
func TestReadMessageIntoAllocatesNothing(t *testing.T) {
	var stream []byte
	for range 300 {
		stream = appendFrame(stream, OpBinary, []byte("k"), false, [4]byte{})
	}
	c := newConn(struct {
		io.Reader
		io.Writer
		io.Closer
	}{bytes.NewReader(stream), io.Discard, io.NopCloser(nil)}, nil, true)
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(200, func() {
		op, p, err := c.ReadMessageInto(buf)
		if err != nil || op != OpBinary || string(p) != "k" {
			t.Fatalf("message %v %q, %v", op, p, err)
		}
	}); n != 0 {
		t.Errorf("%v allocations a message, want 0", n)
	}
}

// FuzzReadMessageInto: reading into one reused buffer (ReadMessageInto,
// as the CLI reads its output: a larger message's buffer kept for the
// next) reads every input as ReadMessage does: the same messages, of
// fragments joined across control frames and past the buffer's size, the
// same errors at the same point, and the same pongs and closes answered.
func FuzzReadMessageInto(f *testing.F) {
	for _, tt := range frameTests {
		f.Add(tt.in, false)
		f.Add(tt.in, true)
	}
	var many []byte // a long message, a short one, fragments around a ping, a long one again
	many = appendFrame(many, OpBinary, bytes.Repeat([]byte("L"), 40), true, [4]byte{1})
	many = appendFrame(many, OpBinary, []byte("s"), true, [4]byte{2})
	many = append(many, 0x02, 0x83, 0, 0, 0, 0, 'a', 'b', 'c')
	many = appendFrame(many, OpPing, []byte("pp"), true, [4]byte{3})
	many = append(many, 0x00, 0x81, 0, 0, 0, 0, 'd')
	many = append(many, 0x80, 0x85, 7, 7, 7, 7, 'e'^7, 'f'^7, 'g'^7, 'h'^7, 'i'^7)
	many = appendFrame(many, OpText, bytes.Repeat([]byte("T"), 300), true, [4]byte{4})
	f.Add(many, false)
	f.Fuzz(func(t *testing.T, in []byte, client bool) {
		a := &rwc{Reader: bytes.NewReader(in)}
		b := &rwc{Reader: bytes.NewReader(in)}
		ca, cb := newConn(a, bufio.NewReaderSize(a.Reader, 16), client), newConn(b, bufio.NewReaderSize(b.Reader, 16), client)
		ca.MaxMessage, cb.MaxMessage = 1<<12, 1<<12
		buf := make([]byte, 0, 4)
		for i := range len(in) + 1 {
			opa, pa, erra := ca.ReadMessage()
			opb, pb, errb := cb.ReadMessageInto(buf)
			if (erra == nil) != (errb == nil) || erra != nil && erra.Error() != errb.Error() {
				t.Fatalf("message %d: ReadMessage %v; ReadMessageInto %v", i, erra, errb)
			}
			if !client && !bytes.Equal(a.out.Bytes(), b.out.Bytes()) { // (a client's frames are masked at random)
				t.Fatalf("message %d: answered %x; into a buffer %x", i, a.out.Bytes(), b.out.Bytes())
			}
			if erra != nil {
				return
			}
			if opa != opb || !bytes.Equal(pa, pb) {
				t.Fatalf("message %d: ReadMessage %v %q; ReadMessageInto %v %q", i, opa, pa, opb, pb)
			}
			if cap(pb) > cap(buf) {
				buf = pb[:0]
			}
		}
		t.Fatalf("more messages than input bytes")
	})
}
