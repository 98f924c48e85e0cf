package agent

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent/files"
)

// snapSend of one file's chunks (one run, one sendfile) to a peer that
// takes every byte, slowly but without pause, sends them all: bulkIdle
// bounds a peer that takes nothing for that long, not the whole run.
func TestSnapSendSlowPeer(t *testing.T) {
	idle := bulkIdle
	bulkIdle = 3 * time.Second
	t.Cleanup(func() { bulkIdle = idle })
	root := t.TempDir()
	data := make([]byte, 48<<20)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(root, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	fo, pub := bulkOps(t, root, "http://127.0.0.1:1")
	got := make(chan int64, 1)
	fo.bulk.base.Host = hostOf(fakeBulkEnd(t, pub, "bS1", func(c net.Conn) {
		// About 8 MiB/s: a piece of sendfilePiece in a second, the
		// whole file in six.
		var n int64
		buf := make([]byte, 256<<10)
		for {
			m, err := io.ReadFull(c, buf)
			n += int64(m)
			if err != nil {
				break
			}
			time.Sleep(30 * time.Millisecond)
		}
		got <- n
	}))
	ctx := context.Background()
	s, err := fo.fs.Scan(ctx, ".", files.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sums []files.Sum
	for _, e := range s.Entries {
		for _, c := range e.Chunks {
			sums = append(sums, c.Sum)
		}
	}
	if err := fo.snapSend(ctx, s, sums, "bS1"); err != nil {
		t.Fatalf("snapSend to a slow peer: %v", err)
	}
	if n := <-got; n != int64(len(data)) {
		t.Fatalf("the peer got %d bytes, want %d", n, len(data))
	}
}
