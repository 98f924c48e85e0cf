//go:build linux

package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// waitAll waits for n results on errs, failing after 5 seconds.
func waitAll(t *testing.T, errs <-chan error, n int, what string) []error {
	t.Helper()
	var got []error
	for range n {
		select {
		case err := <-errs:
			got = append(got, err)
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: %d of %d reads still waiting", what, n-len(got), n)
		}
	}
	return got
}

// TestConcurrentReadsEnd: with one direction's callback and state shared
// by every call on a descriptor, reads made by several goroutines at once
// each get their own bytes, a read waiting on the poller does not hold up
// a write the other way, and the reads still waiting all end, the ones
// queued behind the first as well, at a deadline and at Close (with the
// errors the connection's and the file's own reads give).
func TestConcurrentReadsEnd(t *testing.T) {
	a, b := tcpPair(t)
	ra, rb := Conn(a), Conn(b)
	errs := make(chan error, 3)
	got := make(chan byte, 3)
	for range 3 {
		go func() {
			p := make([]byte, 1)
			n, err := ra.Read(p)
			if n == 1 {
				got <- p[0]
			}
			errs <- err
		}()
	}
	time.Sleep(20 * time.Millisecond)
	// A write on the connection while its reads wait on the poller.
	done := make(chan error, 1)
	go func() { _, err := ra.Write([]byte("w")); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write waited for the reads of the other direction")
	}
	if p := make([]byte, 1); func() bool { n, err := rb.Read(p); return err != nil || n != 1 || p[0] != 'w' }() {
		t.Fatal("the write while reads waited did not arrive")
	}
	if _, err := rb.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if e := waitAll(t, errs, 1, "one byte for three readers"); e[0] != nil {
		t.Fatal(e[0])
	}
	if c := <-got; c != 'x' {
		t.Fatalf("read %q, want x", c)
	}
	a.Close()
	for _, err := range waitAll(t, errs, 2, "conn closed") {
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read ended by Close: %v, want net.ErrClosed", err)
		}
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	fr := File(r)
	for range 3 {
		go func() { _, err := fr.Read(make([]byte, 4)); errs <- err }()
	}
	time.Sleep(20 * time.Millisecond)
	if err := r.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, err := range waitAll(t, errs, 3, "read deadline") {
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read ended by the deadline: %v, want os.ErrDeadlineExceeded", err)
		}
	}
	if err := r.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		go func() { _, err := fr.Read(make([]byte, 4)); errs <- err }()
	}
	time.Sleep(20 * time.Millisecond)
	r.Close()
	for _, err := range waitAll(t, errs, 3, "file closed") {
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("read ended by Close: %v, want os.ErrClosed", err)
		}
	}
}

// TestConcurrentWritesWhole: writes made by several goroutines at once,
// each larger than the pipe takes at a time (so each waits on the poller
// part way), go out whole, one after another, never interleaved.
func TestConcurrentWritesWhole(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fw := File(w)
	const writers, size = 6, 48 << 10 // the pipe holds 64 KiB: a second write waits
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := fw.Write(bytes.Repeat([]byte{byte('a' + i)}, size)); err != nil {
				t.Error(err)
			}
		}()
	}
	go func() { wg.Wait(); w.Close() }()
	all, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != writers*size {
		t.Fatalf("read %d bytes, want %d", len(all), writers*size)
	}
	seen := map[byte]bool{}
	for i := 0; i < len(all); i += size {
		c := all[i]
		if seen[c] || !bytes.Equal(all[i:i+size], bytes.Repeat([]byte{c}, size)) {
			t.Fatalf("write %d of the pipe's bytes is not one writer's whole write", i/size)
		}
		seen[c] = true
	}
}

// TestBufferNotKept: the caller's buffer is not held by the descriptor's
// state after a read or write returns, whether it succeeded, failed or
// waited until Close: a connection left open keeps no output buffer alive.
func TestBufferNotKept(t *testing.T) {
	type buffer struct{ b [256]byte }
	freed := func(op func(p []byte)) bool {
		done := make(chan struct{})
		func() {
			x := new(buffer)
			runtime.SetFinalizer(x, func(*buffer) { close(done) })
			op(x.b[:])
		}()
		for range 20 {
			runtime.GC()
			select {
			case <-done:
				return true
			case <-time.After(10 * time.Millisecond):
			}
		}
		return false
	}
	a, b := tcpPair(t)
	ra, rb := Conn(a), Conn(b)
	if !freed(func(p []byte) {
		if _, err := ra.Write(p); err != nil {
			t.Fatal(err)
		}
	}) {
		t.Error("a written buffer is kept after the write")
	}
	if !freed(func(p []byte) {
		if _, err := io.ReadFull(rb, p); err != nil {
			t.Fatal(err)
		}
	}) {
		t.Error("a read buffer is kept after the read")
	}
	if !freed(func(p []byte) {
		_ = rb.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := rb.Read(p); err == nil {
			t.Fatal("read did not time out")
		}
	}) {
		t.Error("a read buffer is kept after the read timed out")
	}
	runtime.KeepAlive(ra)
	runtime.KeepAlive(rb)
}
