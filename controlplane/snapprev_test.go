package controlplane

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/outposthq/outpost/wire"
)

// entriesOf is a manifest of one file whose chunks are named by n
// distinct sums (from seed).
func entriesOf(seed string, n int) []wire.SnapEntry {
	e := wire.SnapEntry{Path: "f"}
	for i := range n {
		sum := sha256.Sum256(fmt.Appendf(nil, "%s-%d", seed, i))
		e.Sums = append(e.Sums, sum[:]...)
		e.Sizes = append(e.Sizes, 1)
	}
	return []wire.SnapEntry{e}
}

// The sessions' remembered chunks: the last snapshot replaces the one
// before, a deleted session is forgotten, and what is held stays within
// sessionChunksMax names (other sessions go first; a snapshot larger than
// the bound is not remembered at all).
func TestSessionChunks(t *testing.T) {
	var c sessionChunks
	if c.get("w1", "s1") != nil || c.get("w1", "") != nil {
		t.Fatal("an empty cache knows a session")
	}
	c.put("w1", "", "sn0", entriesOf("x", 3)) // no session: nothing kept
	if c.sums != 0 {
		t.Fatalf("a snapshot without a session was remembered (%d names)", c.sums)
	}
	first := entriesOf("a", 10)
	c.put("w1", "s1", "sn1", first)
	c.put("w1", "s1", "sn2", entriesOf("b", 20))
	p := c.get("w1", "s1")
	if p == nil || p.id != "sn2" || len(p.sums) != 20 || c.sums != 20 {
		t.Fatalf("after two snapshots of s1: %+v, %d names held", p, c.sums)
	}
	if _, ok := p.sums[string(first[0].Sums[:wire.SumSize])]; ok {
		t.Fatal("the replaced snapshot's chunk is still known")
	}
	if _, ok := p.sums[string(entriesOf("b", 20)[0].Sums[5*wire.SumSize:6*wire.SumSize])]; !ok {
		t.Fatal("a chunk of the last snapshot is not known")
	}
	if c.get("w2", "s1") != nil {
		t.Fatal("another workspace's session of the same name is known")
	}
	c.drop("w1", "s1")
	if c.get("w1", "s1") != nil || c.sums != 0 {
		t.Fatalf("a dropped session is known (%d names held)", c.sums)
	}

	half := sessionChunksMax / 2
	c.put("w1", "s1", "sn3", entriesOf("c", half))
	c.put("w1", "s2", "sn4", entriesOf("d", half))
	if c.get("w1", "s1") == nil || c.get("w1", "s2") == nil || c.sums != 2*half {
		t.Fatalf("two sessions within the bound: %d names held", c.sums)
	}
	c.put("w1", "s3", "sn5", entriesOf("e", 10))
	if c.sums > sessionChunksMax || c.get("w1", "s3") == nil || (c.get("w1", "s1") != nil && c.get("w1", "s2") != nil) {
		t.Fatalf("over the bound: %d names held (max %d)", c.sums, sessionChunksMax)
	}
	c.put("w1", "s4", "sn6", entriesOf("f", sessionChunksMax+1))
	if c.get("w1", "s4") != nil || c.sums > sessionChunksMax {
		t.Fatalf("a snapshot larger than the bound was remembered (%d names held)", c.sums)
	}
}
