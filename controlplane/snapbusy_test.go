package controlplane

import (
	"context"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/outposthq/outpost/controlplane/client"
)

// busyStoreEnv is a control plane whose embedded server's stream ingest
// queue holds 1 MiB (a pull publishes up to snapWindow batches of 8 MiB
// at once), a laptop with a tree of 20 MiB and more, and a cloud agent.
func busyStoreEnv(t *testing.T) *snapEnv {
	t.Helper()
	s, err := New(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	s.natsOptions = func(o *server.Options) { o.StreamMaxBufferedSize = 1 << 20 }
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cl := adminClient(s)
	if _, err := cl.CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	e := &snapEnv{s: s, cl: cl, laptopDir: t.TempDir(), cloudDir: t.TempDir()}
	e.laptop = realAgent(t, s, "w1", "laptop", e.laptopDir)
	e.cloud = realAgent(t, s, "w1", "cloud", e.cloudDir)
	writeMixedTree(t, e.laptopDir)
	writeBigFiles(t, e.laptopDir, 20, 3000)
	return e
}

// snapshotWhole takes a first snapshot of the laptop, checks that it
// stored every byte, and restores it on the cloud agent, every file.
func snapshotWhole(t *testing.T, e *snapEnv) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	sn, err := e.laptop.CreateSnapshot(ctx, client.CreateSnapshotRequest{})
	if err != nil {
		t.Fatalf("snapshot into a busy store: %v", err)
	}
	if sn.NewBytes != sn.Bytes {
		t.Errorf("a first snapshot stored %d of its %d bytes", sn.NewBytes, sn.Bytes)
	}
	if _, err := e.cloud.RestoreSnapshot(ctx, sn.ID, client.RestoreSnapshotRequest{Delete: true}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	sameTree(t, e.laptopDir, e.cloudDir)
}

// TestSnapshotStoreBusy: the store's publishes in flight fit the store's
// ingest queue (chunksInFlight), so a pull faster than the store waits
// for it instead of having its chunks dropped (429 Too Many Requests).
func TestSnapshotStoreBusy(t *testing.T) {
	e := busyStoreEnv(t)
	snapshotWhole(t, e)
	if n := e.s.chunkDrops.Load(); n != 0 {
		t.Errorf("the store dropped %d chunk publishes, its ingest queue full", n)
	}
}

// TestSettleRefusedBusy: a publish the store dropped, its ingest queue
// full (429, 10167: a slow disk, publishes past chunksInFlight), is the
// store being busy, not refusing the chunk: it is published again and
// stored, its bytes counted, rather than failing the snapshot.
func TestSettleRefusedBusy(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	data := []byte("a chunk the store dropped, its queue full")
	// A refused publish leaves the chunk unstored, and its future holds
	// the message, as a dropped one's does.
	f, sum := refusedPublish(ctx, t, s, data)
	busy := &jetstream.APIError{Code: 429, ErrorCode: jsErrCodeStreamTooManyRequests, Description: "too many requests"}
	n, err := s.settleRefused(ctx, chunkAck{f: f, size: uint32(len(data))}, busy)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("settleRefused = %d, %v; want the chunk stored, %d bytes", n, err, len(data))
	}
	wantStoredChunk(ctx, t, s, sum, data)
	if s.chunkDrops.Load() != 1 {
		t.Errorf("%d drops counted, want 1", s.chunkDrops.Load())
	}
}

func TestChunksInFlight(t *testing.T) {
	for _, c := range []struct {
		queue      int64
		conns, max int
	}{
		{0, 1, 448}, {0, 2, 224}, {0, 3, 149},
		{1 << 20, 1, 3}, {1 << 20, 2, 1},
		{1 << 10, 1, 1}, {1 << 10, 2, 1},
	} {
		if n := chunksInFlight(c.queue, c.conns); n != c.max {
			t.Errorf("chunksInFlight(%d, %d) = %d, want %d", c.queue, c.conns, n, c.max)
		}
	}
}
