package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestChangeSetsSeenByRsync: two change sets that rewrite the same file
// (same size) within one second, each followed by rsync -a as the carry
// suite's baseline runs it: rsync must copy both changes, or the baseline
// moves fewer bytes than the carries it is compared with (rsync -a's
// quick check compares whole seconds of mtime).
func TestChangeSetsSeenByRsync(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Fatal("the carry suite's baseline needs rsync:", err)
	}
	src, dst := t.TempDir(), t.TempDir()
	var files []string
	for i := range 3 {
		p := filepath.Join(src, fmt.Sprintf("d/f%d", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, randomBytes(rand.New(rand.NewPCG(uint64(i), 1)), 8192), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	sets := []changeSet{{idx: []int{0, 1}}, {idx: []int{1, 2}}, {idx: []int{1}}}
	rsync := func() {
		if b, err := exec.Command("rsync", "-a", src+"/", dst+"/").CombinedOutput(); err != nil {
			t.Fatalf("rsync: %v: %s", err, b)
		}
	}
	// The sets and their copies in one second, as a change set after a
	// short rsync of the one before may be.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
	rsync()
	for i, set := range sets {
		if err := set.apply(src, src, files, rsyncSeed+uint64(i)); err != nil {
			t.Fatal(err)
		}
		rsync()
		for _, p := range files {
			rel, _ := filepath.Rel(src, p)
			want, _ := os.ReadFile(p)
			got, _ := os.ReadFile(filepath.Join(dst, rel))
			if !bytes.Equal(got, want) {
				t.Errorf("after set %d, rsync -a left %s as it was", i, rel)
			}
		}
	}
}
