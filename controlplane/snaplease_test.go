package controlplane

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/outposthq/outpost/controlplane/client"
)

// startReplicas starts a nats-server configured as `outpost nats-config`
// prints it, and n control planes on it, each from its own copy of the
// prepared state dir (as an operator runs replicas).
func startReplicas(t *testing.T, n int) []*Server {
	t.Helper()
	prepared := stateDir(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	natsDir := t.TempDir()
	conf, err := PrepareExternal(prepared, NATSConfig{
		Listen:   "127.0.0.1:" + strconv.Itoa(port),
		StoreDir: filepath.Join(natsDir, "jetstream"),
		JWTDir:   filepath.Join(natsDir, "jwt"),
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(natsDir, "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoSigs = true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(waitLong) {
		t.Fatal("nats-server not ready")
	}
	var out []*Server
	for range n {
		dir := stateDir(t)
		copyFiles(t, prepared, dir)
		cfg := Config{Listen: "127.0.0.1:0", StateDir: dir, NATSURL: "nats://127.0.0.1:" + strconv.Itoa(port),
			Logger: testLogger(), PresenceWindow: 3 * time.Second}
		out = append(out, startServer(t, cfg))
	}
	return out
}

// copyFiles copies the regular files of src into dst, modes kept.
func copyFiles(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		return os.WriteFile(to, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A snapshot deleted on one replica while another replica takes a
// snapshot counting on the same chunks: the chunks stay, the new snapshot
// restores whole, and the chunks only the deleted one used are collected
// once the taking ends.
func TestSnapshotCollectionAcrossReplicas(t *testing.T) {
	rs := startReplicas(t, 2)
	a, b := rs[0], rs[1]
	ctx := context.Background()
	if _, err := adminClient(a).CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	laptopDir, cloudDir := t.TempDir(), t.TempDir()
	writeMixedTree(t, laptopDir)
	writeFile(t, filepath.Join(laptopDir, "only-in-first"), string(pseudoRandom(300_000, 99)), 0o644)
	laptopA := realAgent(t, a, "w1", "laptop", laptopDir)
	realAgent(t, a, "w1", "cloud", cloudDir)
	waitFor(t, waitLong, "replica b sees the agents", func() bool {
		ags, err := adminClient(b).ListAgents(ctx, "w1")
		return err == nil && len(ags) == 2 && ags[0].Status == "online" && ags[1].Status == "online"
	})

	first, err := laptopA.CreateSnapshot(ctx, client.CreateSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	chunksFirst := chunkCount(t, a, "w1")
	os.Remove(filepath.Join(laptopDir, "only-in-first"))

	// Replica a takes a second snapshot and stops after it has seen which
	// chunks the store holds (all of them: nothing new is sent).
	looked, resume := make(chan struct{}), make(chan struct{})
	a.afterChunkLookup = func() {
		close(looked)
		<-resume
	}
	type result struct {
		sn  *client.Snapshot
		err error
	}
	done := make(chan result, 1)
	go func() {
		sn, err := laptopA.CreateSnapshot(ctx, client.CreateSnapshotRequest{})
		done <- result{sn, err}
	}()
	select {
	case <-looked:
	case <-time.After(waitLong):
		t.Fatal("the second snapshot did not look up the chunks")
	}
	// Replica b deletes the first snapshot meanwhile.
	if err := adminClient(b).DeleteSnapshot(ctx, "w1", first.ID); err != nil {
		close(resume)
		t.Fatal(err)
	}
	if n := chunkCount(t, a, "w1"); n != chunksFirst {
		close(resume)
		t.Fatalf("the delete on replica b freed chunks while replica a's snapshot counted on them: %d of %d left", n, chunksFirst)
	}
	close(resume)
	var second result
	select {
	case second = <-done:
	case <-time.After(waitLong):
		t.Fatal("the second snapshot did not end")
	}
	if second.err != nil {
		t.Fatal(second.err)
	}
	if second.sn.NewBytes != 0 {
		t.Fatalf("the second snapshot sent %d new bytes; the store held them all", second.sn.NewBytes)
	}
	res, err := adminClient(b).Agent("w1", "cloud").RestoreSnapshot(ctx, second.sn.ID, client.RestoreSnapshotRequest{})
	if err != nil {
		t.Fatalf("restore of the second snapshot: %v", err)
	}
	if res.Files != second.sn.Files {
		t.Fatalf("restored %d files of %d", res.Files, second.sn.Files)
	}
	sameTree(t, laptopDir, cloudDir)
	// The collection owed by the delete ran when the snapshot ended: the
	// chunks of the removed file are gone, and the usage is what is left.
	waitFor(t, waitLong, "the owed collection", func() bool { return chunkCount(t, a, "w1") < chunksFirst })
	used, _, err := a.snaps.usage(ctx, "w1")
	if err != nil || used != second.sn.Bytes {
		t.Fatalf("usage %d (%v), want the %d bytes of the second snapshot", used, err, second.sn.Bytes)
	}
}

// chunkCount is how many chunks the workspace's store holds.
func chunkCount(t *testing.T, s *Server, ws string) int {
	t.Helper()
	have, err := s.snaps.have(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	return len(have)
}

// With two replicas each running the periodic loop, one takes each of a
// session's periodic snapshots.
func TestPeriodicSnapshotOneReplica(t *testing.T) {
	rs := startReplicas(t, 2)
	a, b := rs[0], rs[1]
	ctx := context.Background()
	if _, err := adminClient(a).CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeMixedTree(t, dir)
	realAgent(t, a, "w1", "laptop", dir)
	waitFor(t, waitLong, "replica b sees the agent", func() bool {
		ag, err := adminClient(b).GetAgent(ctx, "w1", "laptop")
		return err == nil && ag.Status == "online"
	})
	// An hour apart: both replicas find the first one due at once.
	_, err := adminClient(a).CreateSession(ctx, "w1", client.CreateSessionRequest{ID: "s1", Active: "laptop", SnapshotEveryMs: time.Hour.Milliseconds(),
		Backends: map[string]client.SessionBackend{"laptop": {Kind: "agent", Agent: "laptop"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitLong, "a periodic snapshot", func() bool {
		snaps, _ := adminClient(a).ListSnapshots(ctx, "w1")
		return len(snaps) > 0
	})
	// Several ticks of both loops later, still one.
	time.Sleep(4 * periodicTick)
	snaps, err := adminClient(b).ListSnapshots(ctx, "w1")
	if err != nil || len(snaps) != 1 || snaps[0].Kind != snapPeriodic {
		t.Fatalf("periodic snapshots %+v (%v), want one", snaps, err)
	}
}

// Deleting a session deletes the snapshots it took by itself (periodic
// and carry) with their chunks; a snapshot asked for through it stays.
func TestDeleteSessionTakesItsSnapshots(t *testing.T) {
	e := newCarryEnv(t, 1000)
	ctx := context.Background()
	waitFor(t, waitLong, "a periodic snapshot", func() bool {
		snaps, _ := e.cl.ListSnapshots(ctx, "w1")
		return len(snaps) > 0
	})
	if _, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.cloudDir, "kept"), "asked for by name", 0o644)
	manual, err := e.cl.Session("w1", "s1").CreateSnapshot(ctx, client.CreateSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.cl.DeleteSession(ctx, "w1", "s1"); err != nil {
		t.Fatal(err)
	}
	snaps, err := e.cl.ListSnapshots(ctx, "w1")
	if err != nil || len(snaps) != 1 || snaps[0].ID != manual.ID {
		t.Fatalf("after the session's delete: %+v (%v), want only %s", snaps, err, manual.ID)
	}
	// A periodic snapshot that was under way is dropped when it ends.
	time.Sleep(3 * periodicTick)
	if snaps, _ := e.cl.ListSnapshots(ctx, "w1"); len(snaps) != 1 {
		t.Fatalf("after the session's delete, later: %+v", snaps)
	}
	used, _, err := e.s.snaps.usage(ctx, "w1")
	if err != nil || used != manual.Bytes {
		t.Fatalf("usage %d (%v), want the %d bytes of the snapshot kept", used, err, manual.Bytes)
	}
}
