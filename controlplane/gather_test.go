package controlplane

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
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

func TestGatherConn(t *testing.T) {
	raw := &writesConn{}
	g := &gatherConn{Conn: raw}
	g.Write([]byte("a")) // not gathering: straight through
	done := g.gather()
	g.Write([]byte("b"))
	inner := g.gather() // nested: nothing goes out at its end
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
	// A gather larger than gatherMax goes out as it grows, in order.
	done = g.gather()
	big := bytes.Repeat([]byte("x"), 16<<10)
	for range 3 * gatherMax / len(big) {
		g.Write(big)
	}
	if err := done(); err != nil {
		t.Fatal(err)
	}
	if n := len(raw.all()); n != 4+3*gatherMax {
		t.Fatalf("%d bytes written, want %d", n, 4+3*gatherMax)
	}
	if len(raw.writes) < 4 || len(raw.writes) > 6 {
		t.Fatalf("%d writes for %d bytes gathered", len(raw.writes)-2, 3*gatherMax)
	}
	// A failed write of gathered bytes is the gather's error, and every
	// later write's.
	raw.fail = errors.New("broken")
	done = g.gather()
	if _, err := g.Write([]byte("e")); err != nil {
		t.Fatalf("a gathered write failed before anything was written: %v", err)
	}
	if err := done(); err == nil {
		t.Fatal("the gather's failed write was not reported")
	}
	done = g.gather()
	if _, err := g.Write([]byte("f")); err == nil {
		t.Fatal("a write after a failed gather succeeded")
	}
	done()
}

// Over TLS, where the API's connections gather their records, an upload,
// a download, a range and a process's output stream arrive whole.
func TestTransfersOverTLS(t *testing.T) {
	w := startTLSWorld(t, true)
	ctx := context.Background()
	tgt := w.cl.Agent("ws1", "laptop")
	data := pseudoRandom(3*defaultChunk+12345, 21)
	res, err := tgt.Put(ctx, "big.bin", bytes.NewReader(data), int64(len(data)), client.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); res.Size != int64(len(data)) || res.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("put: %+v", res)
	}
	f, err := tgt.Get(ctx, "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f.Body)
	f.Body.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("download: %d bytes of %d, %v", len(got), len(data), err)
	}
	f, err = tgt.GetRange(ctx, "big.bin", defaultChunk-5, defaultChunk+10)
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(f.Body)
	f.Body.Close()
	if err != nil || !bytes.Equal(got, data[defaultChunk-5:2*defaultChunk+5]) {
		t.Fatalf("range: %d bytes, %v", len(got), err)
	}

	const lines = 200000 // about 5 MB of output
	p, err := tgt.StartProcess(ctx, client.StartProcessRequest{Command: "seq -f '%023.0f' 1 200000"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var exited bool
	err = tgt.Events(ctx, p.ID, 0, func(ev client.ProcessEvent) error {
		switch {
		case ev.Chunk != nil:
			out.Write(ev.Chunk.Data)
		case ev.Kind == client.EventExit:
			exited = true
		case ev.Kind == client.EventClosed:
			return io.EOF
		}
		return nil
	})
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if !exited || out.Len() != lines*24 {
		t.Fatalf("stream: exited %v, %d bytes, want %d", exited, out.Len(), lines*24)
	}
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
func TestGatherConnBulkReads(t *testing.T) {
	data := pseudoRandom(3*readBulk+777, 5)
	raw := &chunkyConn{data: bytes.Clone(data)}
	g := &gatherConn{Conn: raw}
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
