package controlplane

import (
	"context"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/outposthq/outpost/controlplane/client"
)

// TestSnapshotStoreBusy: a store whose ingest queue is full (a slow disk
// behind it, or other carries into the same stream) answers a chunk's
// publish "429 Too Many Requests" and drops it. That is the store being
// busy, not refusing the chunk: the snapshot publishes it again once the
// queue has room, and stores every chunk, rather than failing. Here the
// embedded server's ingest queue is 1 MiB, and a pull publishes up to
// snapWindow batches of 8 MiB at once.
func TestSnapshotStoreBusy(t *testing.T) {
	cfg := testConfig(t)
	s, err := New(cfg)
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
	laptopDir, cloudDir := t.TempDir(), t.TempDir()
	laptop := realAgent(t, s, "w1", "laptop", laptopDir)
	cloud := realAgent(t, s, "w1", "cloud", cloudDir)
	writeMixedTree(t, laptopDir)
	writeBigFiles(t, laptopDir, 20, 3000)
	sn, err := laptop.CreateSnapshot(ctx, client.CreateSnapshotRequest{})
	if err != nil {
		t.Fatalf("snapshot into a busy store: %v", err)
	}
	if sn.NewBytes != sn.Bytes {
		t.Errorf("a first snapshot stored %d of its %d bytes", sn.NewBytes, sn.Bytes)
	}
	if _, err := cloud.RestoreSnapshot(ctx, sn.ID, client.RestoreSnapshotRequest{Delete: true}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	sameTree(t, laptopDir, cloudDir)
}
