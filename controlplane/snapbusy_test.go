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
// uncapped, when set, makes the store's publishes nats.go's default
// 4000 in flight, as if chunksInFlight were not there.
func busyStoreEnv(t *testing.T, uncapped bool) *snapEnv {
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
	if uncapped {
		if s.snapJS, err = jetstream.New(s.storeNC); err != nil {
			t.Fatal(err)
		}
	}
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
	e := busyStoreEnv(t, false)
	snapshotWhole(t, e)
	if n := e.s.chunkDrops.Load(); n != 0 {
		t.Errorf("the store dropped %d chunk publishes, its ingest queue full", n)
	}
}

// TestSnapshotStoreDropsPublishedAgain: a store whose ingest queue is
// full anyway (a slow disk, publishes past chunksInFlight: here nats.go's
// default 4000) drops publishes with 429. That is the store being busy,
// not refusing the chunk: each is published again, and the snapshot
// stores every chunk rather than failing.
func TestSnapshotStoreDropsPublishedAgain(t *testing.T) {
	e := busyStoreEnv(t, true)
	snapshotWhole(t, e)
	if e.s.chunkDrops.Load() == 0 {
		t.Error("the store dropped no publish: the test did not fill its queue")
	}
}

func TestChunksInFlight(t *testing.T) {
	if n := chunksInFlight(0); n != 448 {
		t.Errorf("chunksInFlight(default) = %d, want 448", n)
	}
	if n := chunksInFlight(1 << 20); n != 3 {
		t.Errorf("chunksInFlight(1 MiB) = %d, want 3", n)
	}
	if n := chunksInFlight(1 << 10); n != 1 {
		t.Errorf("chunksInFlight(1 KiB) = %d, want 1", n)
	}
}
