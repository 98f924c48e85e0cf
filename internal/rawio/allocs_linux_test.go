//go:build linux && !race

package rawio

import (
	"os"
	"testing"
)

// TestNoAllocations: a small read and write through a wrapped connection
// or file allocate nothing, so a terminal's keystrokes, a read and a
// write at each hop, add nothing for the garbage collector to do.
func TestNoAllocations(t *testing.T) {
	a, b := tcpPair(t)
	ra, rb := Conn(a), Conn(b)
	in, out := []byte("k"), make([]byte, 16)
	if n := testing.AllocsPerRun(200, func() {
		if _, err := ra.Write(in); err != nil {
			t.Fatal(err)
		}
		if _, err := rb.Read(out); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("conn: %v allocations a write and read, want 0", n)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fr, fw := File(r), File(w)
	if fr == r || fw == w {
		t.Fatal("os.Pipe's ends are not wrapped")
	}
	if n := testing.AllocsPerRun(200, func() {
		if _, err := fw.Write(in); err != nil {
			t.Fatal(err)
		}
		if _, err := fr.Read(out); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("pipe: %v allocations a write and read, want 0", n)
	}
}
