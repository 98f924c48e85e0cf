//go:build linux

package rawio

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// TestFileClosedErrors: a read waiting on the poller ends when the file is
// closed, and a read or write after Close fails with os.ErrClosed, as the
// file's own do (callers test errors.Is(err, os.ErrClosed)).
func TestFileClosedErrors(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rf := File(r)
	ended := make(chan error, 1)
	go func() { _, err := rf.Read(make([]byte, 8)); ended <- err }()
	time.Sleep(20 * time.Millisecond)
	r.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("read ended by Close: %v; want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read waiting on the poller did not end when the file closed")
	}
	if _, err := rf.Read(make([]byte, 8)); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read after Close: %v; want os.ErrClosed", err)
	}
	wf := File(w)
	w.Close()
	if _, err := wf.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("write after Close: %v; want os.ErrClosed", err)
	}
}

// TestFileDeadlines: a file's read and write deadlines end a read waiting
// for input and a write waiting for room, with os.ErrDeadlineExceeded (a
// timeout), and the file goes on after.
func TestFileDeadlines(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	rf, wf := File(r), File(w)
	_ = r.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err = rf.Read(make([]byte, 8))
	var te interface{ Timeout() bool }
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &te) || !te.Timeout() {
		t.Fatalf("read past the deadline: %v; want os.ErrDeadlineExceeded", err)
	}
	_ = r.SetReadDeadline(time.Time{})
	// Fill the pipe, then a write waits until its deadline.
	_ = w.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	chunk := bytes.Repeat([]byte("z"), 4096)
	total := 0
	for {
		n, err := wf.Write(chunk)
		total += n
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("write past the deadline: %v; want os.ErrDeadlineExceeded", err)
			}
			break
		}
		if total > 64<<20 {
			t.Fatal("a pipe took 64 MiB without waiting")
		}
	}
	_ = w.SetWriteDeadline(time.Time{})
	got := 0
	buf := make([]byte, 8192)
	for got < total {
		n, err := rf.Read(buf)
		if err != nil {
			t.Fatalf("read after %d of %d bytes: %v", got, total, err)
		}
		got += n
	}
}

// TestSignalStorm: reads and writes through File and Conn carry every byte
// once, in order, while the process takes signals (SIGWINCH, SIGCHLD, and
// the runtime's preemption SIGURG from a busy goroutine): a direct call is
// not restarted by Go, so an EINTR must neither surface nor lose bytes.
func TestSignalStorm(t *testing.T) {
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, syscall.SIGWINCH, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // signals to the process
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = syscall.Kill(os.Getpid(), syscall.SIGWINCH)
			_ = syscall.Kill(os.Getpid(), syscall.SIGCHLD)
			select {
			case <-sigs:
			default:
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	go func() { // a busy goroutine: preemption signals
		defer wg.Done()
		x := 0
		for {
			select {
			case <-stop:
				_ = x
				return
			default:
			}
			for i := 0; i < 1e6; i++ {
				x += i
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	want := make([]byte, 8<<20)
	rand.New(rand.NewSource(1)).Read(want)
	carry := func(t *testing.T, dst io.Writer, closeDst func(), src io.Reader) {
		errc := make(chan error, 1)
		go func() {
			rng := rand.New(rand.NewSource(2))
			p := want
			for len(p) > 0 {
				n := min(len(p), 1+rng.Intn(Max))
				m, err := dst.Write(p[:n])
				if err != nil || m != n {
					errc <- errors.Join(err, errors.New("short write"))
					return
				}
				p = p[n:]
			}
			closeDst()
			errc <- nil
		}()
		var got bytes.Buffer
		buf := make([]byte, 4096)
		rng := rand.New(rand.NewSource(3))
		for {
			n, err := src.Read(buf[:1+rng.Intn(len(buf))])
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read after %d bytes: %v", got.Len(), err)
			}
		}
		if err := <-errc; err != nil {
			t.Fatalf("write: %v", err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("read %d bytes, not the %d written", got.Len(), len(want))
		}
	}
	t.Run("pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		carry(t, File(w), func() { w.Close() }, File(r))
	})
	t.Run("tcp", func(t *testing.T) {
		a, b := tcpPair(t)
		carry(t, Conn(a), func() { _ = a.(*net.TCPConn).CloseWrite() }, Conn(b))
	})
}

// TestPTYMaster: File of a PTY master (non-blocking, on the poller) reads
// what the slave side writes and ends, as the agent's pump does, with an
// error when the slave side is gone (Linux: EIO).
func TestPTYMaster(t *testing.T) {
	pm, s, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	// As the agent makes it (agent/proc pollable): non-blocking, on the poller.
	fd, err := unix.FcntlInt(pm.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	pm.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	m := os.NewFile(uintptr(fd), "/dev/ptmx")
	defer m.Close()
	mf := File(m)
	if mf == io.ReadWriter(m) {
		t.Fatal("File of a PTY master is not wrapped")
	}
	if _, err := mf.Write([]byte("in\n")); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 3)
	if _, err := io.ReadFull(s, line); err != nil || string(line) != "in\n" {
		t.Fatalf("slave read %q, %v", line, err)
	}
	if _, err := s.Write([]byte("out")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var got []byte
	buf := make([]byte, 64)
	for {
		n, err := mf.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			if !errors.Is(err, syscall.EIO) && err != io.EOF {
				t.Fatalf("read after the slave closed: %v; want EIO or EOF", err)
			}
			break
		}
	}
	if !bytes.Contains(got, []byte("out")) {
		t.Fatalf("master read %q, want what the slave wrote", got)
	}
}

// TestHappensBefore: what a goroutine did before it wrote to a pipe or a
// connection happens before what the reader does after reading it, as Go's
// own reads and writes tell the race detector (syscall.Read and Write
// annotate it); under -race a direct call that does not is reported as a
// data race in any code, tests included, that passes data so.
func TestHappensBefore(t *testing.T) {
	check := func(t *testing.T, dst io.Writer, src io.Reader) {
		var shared []int
		got := make(chan int, 1)
		go func() {
			buf := make([]byte, 1)
			if _, err := io.ReadFull(src, buf); err != nil {
				got <- -1
				return
			}
			got <- shared[0] // after the read: the writer's store is seen
		}()
		time.Sleep(10 * time.Millisecond)
		shared = []int{42} // before the write
		if _, err := dst.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		if v := <-got; v != 42 {
			t.Fatalf("reader saw %d", v)
		}
	}
	t.Run("pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		check(t, File(w), File(r))
	})
	t.Run("tcp", func(t *testing.T) {
		a, b := tcpPair(t)
		check(t, Conn(a), Conn(b))
	})
}

// TestConnErrorText: a wrapped connection's errors read as the
// connection's own (they reach logs and users): one "read tcp a->b: ..."
// and no second, inner operation.
func TestConnErrorText(t *testing.T) {
	a, _ := tcpPair(t)
	ra := Conn(a)
	_ = a.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, want := a.Read(make([]byte, 8))
	_, got := ra.Read(make([]byte, 8))
	if got == nil || got.Error() != want.Error() {
		t.Fatalf("wrapped read past the deadline: %v; want %v", got, want)
	}
	a.Close()
	_, want = a.Write([]byte("x"))
	_, got = ra.Write([]byte("x"))
	if got == nil || got.Error() != want.Error() {
		t.Fatalf("wrapped write after Close: %v; want %v", got, want)
	}
}
