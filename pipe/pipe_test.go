package pipe

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/internal/leaktest"
	"github.com/outposthq/outpost/wire"
)

func TestMain(m *testing.M) { leaktest.Main(m, "outpost/pipe.") }

// link carries one end's frames to the other in order, as NATS does,
// through a queue that never blocks the sender; drop, when set, loses
// the frames it picks.
type link struct {
	mu     sync.Mutex
	q      [][]byte
	wake   chan struct{}
	to     *Conn
	pipeID bool
	drop   func(wire.Frame) bool
	done   chan struct{}
	quit   chan struct{}
}

func newLink(pipeID bool) *link {
	return &link{wake: make(chan struct{}, 1), pipeID: pipeID, done: make(chan struct{}), quit: make(chan struct{})}
}

func (l *link) send(b []byte) error {
	l.mu.Lock()
	l.q = append(l.q, bytes.Clone(b))
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

func (l *link) run() {
	defer close(l.done)
	for {
		l.mu.Lock()
		q := l.q
		l.q = nil
		l.mu.Unlock()
		for _, b := range q {
			f, err := wire.DecodeFrame(b, l.pipeID)
			if err != nil {
				panic(err)
			}
			if l.drop != nil && l.drop(f) {
				continue
			}
			l.to.Deliver(f)
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-l.wake:
		case <-l.quit:
			return
		}
	}
}

// pair is two ends of a pipe joined by links, closed at the test's end.
func pair(t *testing.T, window int) (a, b *Conn, ab, ba *link) {
	t.Helper()
	ab, ba = newLink(true), newLink(false)
	a = New(Config{ID: "p1", WithID: true, Send: ab.send, Window: window, PeerWindow: window})
	b = New(Config{ID: "p1", Send: ba.send, Window: window, PeerWindow: window})
	ab.to, ba.to = b, a
	go ab.run()
	go ba.run()
	t.Cleanup(func() {
		a.Close()
		b.Close()
		close(ab.quit)
		close(ba.quit)
		<-ab.done
		<-ba.done
	})
	return a, b, ab, ba
}

func TestBytesBothWaysAndHalfClose(t *testing.T) {
	a, b, _, _ := pair(t, 64<<10)
	up := bytes.Repeat([]byte("up"), 1<<20)
	down := bytes.Repeat([]byte("dn"), 300<<10)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.Write(up); a.CloseWrite() }()
	go func() { defer wg.Done(); b.Write(down); b.CloseWrite() }()
	gotUp, errUp := io.ReadAll(b)
	gotDown, errDown := io.ReadAll(a)
	wg.Wait()
	if errUp != nil || !bytes.Equal(gotUp, up) {
		t.Fatalf("a→b: %d of %d bytes, %v", len(gotUp), len(up), errUp)
	}
	if errDown != nil || !bytes.Equal(gotDown, down) {
		t.Fatalf("b→a: %d of %d bytes, %v", len(gotDown), len(down), errDown)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after CloseWrite: %v, want net.ErrClosed", err)
	}
}

// A sender never has more than a window unacknowledged: a reader that
// does not read stops its writer, and only its writer.
func TestWindowStopsTheWriter(t *testing.T) {
	const window = 32 << 10
	a, b, _, _ := pair(t, window)
	a.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	n, err := a.Write(make([]byte, 3*window))
	if !errors.Is(err, os.ErrDeadlineExceeded) || n != window {
		t.Fatalf("write into a reader that does not read: %d, %v; want %d and the deadline", n, err, window)
	}
	// Reading frees the window: the rest goes through.
	a.SetWriteDeadline(time.Time{})
	done := make(chan error, 1)
	go func() { _, err := a.Write(make([]byte, 2*window)); done <- err }()
	if _, err := io.ReadFull(b, make([]byte, 3*window)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The window the peer granted, learnt after the pipe was made, bounds the
// writer from then on.
func TestSetPeerWindow(t *testing.T) {
	const window = 32 << 10
	a, b, _, _ := pair(t, window)
	a.SetPeerWindow(window / 2)
	a.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := a.Write(make([]byte, window)); !errors.Is(err, os.ErrDeadlineExceeded) || n != window/2 {
		t.Fatalf("write past the peer's window: %d, %v; want %d and the deadline", n, err, window/2)
	}
	a.SetWriteDeadline(time.Time{})
	if _, err := io.ReadFull(b, make([]byte, window/2)); err != nil {
		t.Fatal(err)
	}
}

func TestResetReachesThePeer(t *testing.T) {
	a, b, _, _ := pair(t, 0)
	a.Reset(errors.New("service went away"))
	_, err := b.Read(make([]byte, 1))
	if !errors.Is(err, ErrReset) {
		t.Fatalf("read after the peer's reset: %v, want ErrReset", err)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, ErrReset) {
		t.Fatalf("write after reset: %v", err)
	}
}

// Close before the peer's EOF is a reset at the peer; after it, a clean end.
func TestCloseCleanOrReset(t *testing.T) {
	a, b, _, _ := pair(t, 0)
	b.CloseWrite()
	if _, err := io.ReadAll(a); err != nil {
		t.Fatal(err)
	}
	a.Close() // the peer ended its side: a clean end
	if _, err := io.ReadAll(b); err != nil {
		t.Fatalf("peer after a clean close: %v, want EOF", err)
	}

	c, d, _, _ := pair(t, 0)
	c.Close() // d still sending
	if _, err := d.Read(make([]byte, 1)); !errors.Is(err, ErrReset) {
		t.Fatalf("peer of a close with its side open: %v, want ErrReset", err)
	}
}

// A lost frame resets the pipe instead of corrupting it.
func TestLostFrameResets(t *testing.T) {
	a, b, ab, _ := pair(t, 1<<20)
	var once sync.Once
	ab.drop = func(f wire.Frame) bool {
		dropped := false
		if f.Kind == wire.FrameData && f.Off > 0 {
			once.Do(func() { dropped = true })
		}
		return dropped
	}
	go a.Write(make([]byte, 3*wire.PipeChunk))
	_, err := io.ReadAll(b)
	if !errors.Is(err, ErrReset) {
		t.Fatalf("after a lost frame: %v, want ErrReset", err)
	}
}

func TestReadDeadline(t *testing.T) {
	a, _, _, _ := pair(t, 0)
	a.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with nothing sent: %v, want the deadline", err)
	}
}

// A peer that sends past the window it was granted is reset.
func TestOverrunResets(t *testing.T) {
	b := New(Config{ID: "p", Send: func([]byte) error { return nil }, Window: 10})
	b.Deliver(wire.Frame{Kind: wire.FrameData, Off: 0, Data: make([]byte, 11)})
	if _, err := b.Read(make([]byte, 1)); !errors.Is(err, ErrReset) {
		t.Fatalf("after an overrun: %v, want ErrReset", err)
	}
	b.Close()
}
