package bulkconn

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"net"
	"sync"
	"testing"
)

// writesConn records each write that reaches the connection.
type writesConn struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
	fail   error
}

func (c *writesConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return 0, c.fail
	}
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

func (c *writesConn) all() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Join(c.writes, nil)
}

func TestGather(t *testing.T) {
	raw := &writesConn{}
	g := New(raw)
	g.Write([]byte("a")) // not gathering: straight through
	done := g.Gather()
	g.Write([]byte("b"))
	inner := g.Gather() // nested: nothing goes out at its end
	g.Write([]byte("c"))
	if err := inner(); err != nil {
		t.Fatal(err)
	}
	g.Write([]byte("d"))
	if len(raw.writes) != 1 {
		t.Fatalf("%d writes while gathering, want 1 (the one before)", len(raw.writes))
	}
	if err := done(); err != nil {
		t.Fatal(err)
	}
	if len(raw.writes) != 2 || string(raw.writes[1]) != "bcd" {
		t.Fatalf("writes %q, want [a bcd]", raw.writes)
	}
	// A gather larger than GatherMax goes out as it grows, in order.
	done = g.Gather()
	big := bytes.Repeat([]byte("x"), 16<<10)
	for range 3 * GatherMax / len(big) {
		g.Write(big)
	}
	if err := done(); err != nil {
		t.Fatal(err)
	}
	if n := len(raw.all()); n != 4+3*GatherMax {
		t.Fatalf("%d bytes written, want %d", n, 4+3*GatherMax)
	}
	if len(raw.writes) < 4 || len(raw.writes) > 6 {
		t.Fatalf("%d writes for %d bytes gathered", len(raw.writes)-2, 3*GatherMax)
	}
	// A failed write of gathered bytes is the gather's error, and every
	// later write's.
	raw.fail = errors.New("broken")
	done = g.Gather()
	if _, err := g.Write([]byte("e")); err != nil {
		t.Fatalf("a gathered write failed before anything was written: %v", err)
	}
	if err := done(); err == nil {
		t.Fatal("the gather's failed write was not reported")
	}
	done = g.Gather()
	if _, err := g.Write([]byte("f")); err == nil {
		t.Fatal("a write after a failed gather succeeded")
	}
	done()
}

// chunkyConn returns reads of the sizes it was given, then EOF.
type chunkyConn struct {
	net.Conn
	data  []byte
	reads []int // sizes of the reads the connection was asked for
}

func (c *chunkyConn) Read(p []byte) (int, error) {
	c.reads = append(c.reads, len(p))
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.data)
	c.data = c.data[n:]
	return n, nil
}

// Reads that fill what was asked switch to large reads, and every byte
// comes out in order.
func TestBulkReads(t *testing.T) {
	data := make([]byte, 3*readBulk+777)
	rand.New(rand.NewSource(5)).Read(data)
	raw := &chunkyConn{data: bytes.Clone(data)}
	g := New(raw)
	var got []byte
	p := make([]byte, 16<<10)
	for {
		n, err := g.Read(p)
		got = append(got, p[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, want %d equal", len(got), len(data))
	}
	if raw.reads[1] != readBulk {
		t.Fatalf("the read after a full one asked for %d bytes, want %d", raw.reads[1], readBulk)
	}
	if len(raw.reads) > 8 {
		t.Fatalf("%d reads of the connection for %d bytes", len(raw.reads), len(data))
	}
}
