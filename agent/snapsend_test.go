package agent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/wire"
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

// restoreBulk stops writing soon after its context ends (a request at a
// newer epoch of the session stops it and waits for it, within its
// start-by time): here the files are small, the sender faster than the
// writes, so that a read brings thousands of files' chunks at once; the
// context ends when 1001 files are in place, and few more may be written
// after that.
func TestRestoreBulkStopsWhenSuperseded(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	entries, names, sizes, data := smallFiles(20000)
	var sums []byte // as the request carries them
	for _, s := range names {
		sums = append(sums, s[:]...)
	}
	fo, pub := bulkOps(t, src, "http://127.0.0.1:1")
	fo.bulk.base.Host = hostOf(fakeBulkEnd(t, pub, "bR1", func(c net.Conn) {
		c.Write(data)
		io.Copy(io.Discard, c)
	}))
	ctx, cancel, r := beginRestore(t, dst, entries)
	done := make(chan error, 1)
	go func() {
		done <- fo.restoreBulk(ctx, r, &wire.SnapRestoreChunksRequest{Handle: "h", Sums: sums, Sizes: sizes, Ticket: "bR1"})
	}()
	stopsAtFile1001(t, dst, "restoreBulk", done, cancel)
}

// smallFiles is a manifest of directory d and n files in it, d/f00000
// on, of 200 bytes, one chunk each; and their chunks in that order, as a
// restore's chunks request carries them.
func smallFiles(n int) (entries []files.SnapEntry, sums []files.Sum, sizes []uint32, data []byte) {
	entries = append(entries, files.SnapEntry{Path: "d", Type: files.TypeDir, Mode: 0o755})
	for i := range n {
		b := []byte(fmt.Sprintf("%0200d", i))
		s := sha256.Sum256(b)
		entries = append(entries, files.SnapEntry{Path: fmt.Sprintf("d/f%05d", i), Type: files.TypeFile, Mode: 0o644, Size: 200,
			Chunks: []files.Chunk{{Sum: s, Size: 200}}})
		sums = append(sums, s)
		sizes = append(sizes, 200)
		data = append(data, b...)
	}
	return entries, sums, sizes, data
}

// beginRestore begins a restore of entries into dst, under a context
// cancel ends; the restore is aborted, the context ended and dst's FS
// closed when t ends.
func beginRestore(t *testing.T, dst string, entries []files.SnapEntry) (context.Context, context.CancelFunc, *files.Restore) {
	t.Helper()
	df, err := files.New(dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { df.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r, err := df.BeginRestore(ctx, ".", entries, files.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Abort)
	return ctx, cancel, r
}

// stopsAtFile1001 waits until smallFiles' d/f01000 is in place under dst
// (what, which answers on done, must not have ended before), ends its
// context with cancel, and checks that it stops with context.Canceled
// and few files more written.
func stopsAtFile1001(t *testing.T, dst, what string, done <-chan error, cancel context.CancelFunc) {
	t.Helper()
	for {
		if _, err := os.Stat(filepath.Join(dst, "d/f01000")); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("%s ended before its context did: %v", what, err)
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("%s after its context ended: %v, want context.Canceled", what, err)
	}
	ents, err := os.ReadDir(filepath.Join(dst, "d"))
	if err != nil {
		t.Fatal(err)
	}
	// A thousand and one were in place when it ended; a few more may be
	// under way.
	if len(ents) > 1500 {
		t.Fatalf("%d files written, 1001 when the context ended: %s went on writing after it", len(ents), what)
	}
}

// A restore's chunks sent in the request (not on a bulk connection) are
// written in small PutAlls too, and none after the request's context has
// ended: here one request holds 5,000 small files' chunks, and the
// context ends when 1001 of them are in place.
func TestRestoreChunksStopsWhenSuperseded(t *testing.T) {
	dst := t.TempDir()
	entries, sums, sizes, data := smallFiles(5000)
	ctx, cancel, r := beginRestore(t, dst, entries)
	done := make(chan error, 1)
	go func() { done <- putChunks(ctx, r.PutAll, sums, sizes, data) }()
	stopsAtFile1001(t, dst, "putChunks", done, cancel)
}

// A batch's chunks are written on two goroutines at once (files of a
// change are many and small: on ext4 making each is most of its cost),
// every chunk exactly once, and the restore is then complete; a failed
// write stops both and is the error.
func TestPutChunksTwoAtOnce(t *testing.T) {
	defer func(n int) { putWorkers = n }(putWorkers)
	putWorkers = 2
	const n = 1000
	dst := t.TempDir()
	entries, sums, sizes, data := smallFiles(n)
	ctx, _, r := beginRestore(t, dst, entries)
	var mu sync.Mutex
	in, most, calls := 0, 0, 0
	second := make(chan struct{})
	put := func(s []files.Sum, z []uint32, d []byte) error {
		mu.Lock()
		in++
		calls++
		most = max(most, in)
		if in == 2 && most == 2 && calls <= 2 {
			close(second)
		}
		first := calls == 1
		mu.Unlock()
		if first {
			// The first call waits (a while at most) for a second
			// to begin beside it.
			select {
			case <-second:
			case <-time.After(5 * time.Second):
			}
		}
		err := r.PutAll(s, z, d)
		mu.Lock()
		in--
		mu.Unlock()
		return err
	}
	if err := putChunks(ctx, put, sums, sizes, data); err != nil {
		t.Fatal(err)
	}
	if most != 2 {
		t.Errorf("at most %d writes at once, want 2", most)
	}
	res, err := r.Commit(ctx)
	if err != nil || res.Written != n {
		t.Fatalf("commit after the batch: %+v, %v; want %d files written", res, err, n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		if b, err := os.ReadFile(filepath.Join(dst, fmt.Sprintf("d/f%05d", i))); err != nil || string(b) != fmt.Sprintf("%0200d", i) {
			t.Errorf("d/f%05d: %q, %v", i, b, err)
		}
	}
	// A failed write stops both workers and is the error.
	failed := errors.New("injected")
	calls = 0
	err = putChunks(ctx, func(s []files.Sum, z []uint32, d []byte) error {
		mu.Lock()
		calls++
		mu.Unlock()
		return failed
	}, sums, sizes, data)
	if !errors.Is(err, failed) || calls > 2 {
		t.Errorf("putChunks with failing writes: %v after %d calls, want the failure after 2 at most", err, calls)
	}
}
