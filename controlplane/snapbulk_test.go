package controlplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// writeBigFiles adds n random files of 1 MiB (and a little) under dir/big:
// a first carry of more than bulkMin.
func writeBigFiles(t *testing.T, dir string, n int, seed uint64) {
	t.Helper()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("big/b%02d.bin", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, pseudoRandom(1<<20+i*1013, seed+uint64(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A first carry of more than bulkMin pulls its chunks from the old
// backend, and forwards them to the new one, on bulk connections (one a
// batch of up to snapBulkBatch), not through the NATS server, and the new
// backend gets every file, mode and link as they are.
func TestCarryPullsOnBulkConnections(t *testing.T) {
	e := newCarryEnvConfig(t, 0, func(_ *Config, laptopDir string) { writeBigFiles(t, laptopDir, 20, 1000) })
	claimed := e.s.bulk.claimed.Load()
	stores := append([]*nats.Conn{e.s.storeNC}, e.s.storeMore...)
	if len(stores) != storeConns {
		t.Fatalf("%d store connections, want %d", len(stores), storeConns)
	}
	storeOut := make([]uint64, len(stores))
	for i, nc := range stores {
		storeOut[i] = nc.Stats().OutBytes
	}
	svcOut := e.s.nc.Stats().OutBytes
	lc := carrySwap(t, e)("cloud")
	sameTree(t, e.laptopDir, e.cloudDir)
	sn := lastSnapshot(t, e)
	size := sn.Bytes
	if lc.TransferredBytes != size || sn.NewBytes != size {
		t.Errorf("stored %d and sent %d bytes of a %d-byte tree", sn.NewBytes, lc.TransferredBytes, size)
	}
	// With the embedded server the chunks go into the store on its
	// in-process connections, not on the service connection's socket,
	// and the pull's batches (three at least) take turns on them.
	var sent uint64
	for i, nc := range stores {
		n := nc.Stats().OutBytes - storeOut[i]
		if n < 1<<20 {
			t.Errorf("store connection %d sent %d bytes of a %d-byte first carry, want a batch's (1 MiB and more)", i, n, size)
		}
		sent += n
	}
	if sent < uint64(size) {
		t.Errorf("the store's connections sent %d bytes of a %d-byte first carry", sent, size)
	}
	if n := e.s.nc.Stats().OutBytes - svcOut; n >= uint64(size) {
		t.Errorf("the service connection sent %d bytes of a %d-byte first carry", n, size)
	}
	// 20 MiB and more in batches of 8 MiB at most: three at least from
	// the laptop, three at least to the cloud.
	if n := e.s.bulk.claimed.Load() - claimed; n < 6 {
		t.Errorf("%d bulk connections for a %d-byte carry, want 6 or more", n, size)
	}
	if n := e.s.snapBulkFallbacks.Load(); n != 0 {
		t.Errorf("%d pulls fell back to NATS", n)
	}
}

// A first snapshot whose first bulk batch fails before its connection came
// (the agent could not dial, say) reads that batch and the rest over NATS:
// the snapshot is whole.
func TestSnapshotBulkFallsBackToNATS(t *testing.T) {
	e := newSnapEnv(t, testConfig(t))
	writeMixedTree(t, e.laptopDir)
	writeBigFiles(t, e.laptopDir, 12, 2000)
	ctx := context.Background()
	// The first batch's agent cannot make its bulk connection (what a real
	// agent answers then: unavailable).
	src := &faultTarget{target: agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "laptop"}}, op: wire.OpSnapRead, n: 1,
		err: wire.Errorf(wire.CodeUnavailable, "", "bulk connection: connection refused")}
	claimed := e.s.bulk.claimed.Load()
	sn, err := e.s.takeSnapshot(ctx, src, snapshotSpec{ws: "w1", agent: "laptop", kind: snapManual})
	if err != nil {
		t.Fatal(err)
	}
	if !src.hit.Load() {
		t.Fatal("no fs.snap.read failed")
	}
	if n := e.s.snapBulkFallbacks.Load(); n != 1 {
		t.Errorf("%d pulls fell back to NATS, want 1", n)
	}
	if sn.NewBytes != sn.Bytes {
		t.Errorf("stored %d of %d bytes", sn.NewBytes, sn.Bytes)
	}
	t.Logf("bulk connections: %d (batches in flight before the failure was seen)", e.s.bulk.claimed.Load()-claimed)
	if _, err := e.cloud.RestoreSnapshot(ctx, sn.ID, client.RestoreSnapshotRequest{Delete: true}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, e.laptopDir, e.cloudDir)
}

// An agent that answers a batch's fs.snap.read with an error of its own
// (the file changed since the scan) before it makes the batch's bulk
// connection ends the snapshot with that error, as PROTOCOL.md says: the
// pull does not read the batch again over NATS, which would only ask the
// agent the same question.
func TestSnapshotBulkAgentsOwnErrorEndsPull(t *testing.T) {
	e := newSnapEnv(t, testConfig(t))
	writeMixedTree(t, e.laptopDir)
	writeBigFiles(t, e.laptopDir, 12, 2000)
	src := &faultTarget{target: agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "laptop"}}, op: wire.OpSnapRead, n: 1,
		err: wire.Errorf(wire.CodeConflict, wire.ReasonSourceChanged, "a file changed since the scan")}
	_, err := e.s.takeSnapshot(context.Background(), src, snapshotSpec{ws: "w1", agent: "laptop", kind: snapManual})
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeConflict || we.Reason != wire.ReasonSourceChanged {
		t.Fatalf("snapshot: %v, want conflict/source_changed", err)
	}
	if !src.hit.Load() {
		t.Fatal("no fs.snap.read failed")
	}
	if n := e.s.snapBulkFallbacks.Load(); n != 0 {
		t.Errorf("%d pulls fell back to NATS after the agent's own error, want 0", n)
	}
}

// openHostileBulk does what a hostile agent holding its own key can: it
// reads req's chunks from real over NATS, a batch at a time, and opens
// req's bulk connection signed with seed for ag. It returns the chunks'
// real content and the upgraded connection, which the caller closes.
func openHostileBulk(ctx context.Context, s *Server, real target, ag subjects.Agent, seed []byte, op string, req *wire.SnapReadRequest, opts rpc.CallOptions) ([]byte, net.Conn, error) {
	var data []byte
	for i := 0; i < len(req.Sums); i += wire.SumSize {
		var res wire.SnapReadResult
		if err := real.Concurrent().Call(ctx, op, &wire.SnapReadRequest{Handle: req.Handle, Sums: req.Sums[i : i+wire.SumSize]}, &res, opts); err != nil {
			return nil, nil, err
		}
		data = append(data, res.Data...)
	}
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		return nil, nil, err
	}
	sig, err := kp.Sign(wire.BulkSigned(ag.Workspace, ag.ID, req.Ticket))
	if err != nil {
		return nil, nil, err
	}
	code, conn, err := tryBulk(s, req.Ticket, wire.EncodeBulkSignature(sig))
	if err != nil {
		return nil, nil, err
	}
	if code != 101 {
		conn.Close()
		return nil, nil, fmt.Errorf("bulk upgrade: status %d", code)
	}
	return data, conn, nil
}

// An agent is not trusted with the store: a chunk that comes on a bulk
// connection with content other than its name is refused as over NATS
// (conflict/source_changed), the pull does not fall back to NATS, and no
// snapshot is recorded.
func TestSnapshotBulkRefusesWrongContent(t *testing.T) {
	s := startServer(t, testConfig(t))
	cl := adminClient(s)
	ctx := context.Background()
	if _, err := cl.CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeMixedTree(t, dir)
	writeBigFiles(t, dir, 10, 3000)
	ta := enrollAgent(t, s, "w1", "laptop")
	runAgent(t, s, &enroll.Config{URL: s.URL(), Workspace: "w1", Agent: "laptop", NATSURLs: ta.urls, JWT: ta.jwt, Seed: string(ta.seed)}, dir)
	ag := subjects.Agent{Workspace: "w1", ID: "laptop"}
	// bulkHostile with neither mode: each batch's real content with one
	// byte changed, as a hostile agent would send.
	src := &bulkHostile{target: agentTarget{rpc: s.rpc, ag: ag}, s: s, ag: ag, seed: ta.seed}
	_, err := s.takeSnapshot(ctx, src, snapshotSpec{ws: "w1", agent: "laptop", kind: snapManual})
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeConflict || we.Reason != wire.ReasonSourceChanged {
		t.Fatalf("snapshot: %v, want conflict/source_changed", err)
	}
	if src.took.Load() == 0 {
		t.Fatal("no batch came on a bulk connection")
	}
	if n := s.snapBulkFallbacks.Load(); n != 0 {
		t.Errorf("%d pulls fell back to NATS after a wrong chunk", n)
	}
	if snaps, _ := cl.ListSnapshots(ctx, "w1"); len(snaps) != 0 {
		t.Fatalf("recorded %+v", snaps)
	}
}

// A first carry of more than the pull's bulk buffers hold at once
// (snapWindow batches of snapBulkBatch) reads into them again while the
// forwarder, slow here, still sends chunks from them: every file the new
// backend gets is the old one's, byte for byte (the restore does not
// check the control plane's chunks against their names).
func TestCarryForwardsFromReusedPullBuffers(t *testing.T) {
	e := newCarryEnvConfig(t, 0, func(_ *Config, laptopDir string) { writeBigFiles(t, laptopDir, 64, 2000) })
	e.s.beforeForward = func() { time.Sleep(20 * time.Millisecond) }
	lc := carrySwap(t, e)("cloud")
	sameTree(t, e.laptopDir, e.cloudDir)
	if sn := lastSnapshot(t, e); lc.TransferredBytes != sn.Bytes || sn.Bytes < snapWindow*snapBulkBatch {
		t.Errorf("sent %d bytes of a %d-byte tree, want all of more than %d", lc.TransferredBytes, sn.Bytes, snapWindow*snapBulkBatch)
	}
	if n := e.s.snapBulkFallbacks.Load(); n != 0 {
		t.Errorf("%d pulls fell back to NATS", n)
	}
}

// Over TLS (the bulk connections too), a first carry's forward batches
// of chunks in the pull's buffers reach the new backend whole: each
// chunk is written from where it is, its records gathered.
func TestCarryForwardsOverTLS(t *testing.T) {
	cfg := testConfig(t)
	cfg.TLSSelfSigned = []string{"127.0.0.1"}
	s := startServer(t, cfg)
	if !strings.HasPrefix(s.URL(), "https://") {
		t.Fatalf("the control plane is at %s, not on TLS", s.URL())
	}
	cl := adminClient(s)
	cl.HTTP = trusting(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if _, err := cl.CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	e := &carryEnv{s: s, cl: cl, laptopDir: t.TempDir(), cloudDir: t.TempDir()}
	writeMixedTree(t, e.laptopDir)
	writeBigFiles(t, e.laptopDir, 20, 3000)
	for id, root := range map[string]string{"laptop": e.laptopDir, "cloud": e.cloudDir} {
		runAgent(t, s, enrollPinned(t, s, cl, "w1", id), root)
	}
	_, err := cl.CreateSession(ctx, "w1", client.CreateSessionRequest{ID: "s1", Active: "laptop",
		Backends: map[string]client.SessionBackend{"laptop": {Kind: "agent", Agent: "laptop"}, "cloud": {Kind: "agent", Agent: "cloud"}}})
	if err != nil {
		t.Fatal(err)
	}
	claimed := s.bulk.claimed.Load()
	carrySwap(t, e)("cloud")
	sameTree(t, e.laptopDir, e.cloudDir)
	if n := s.bulk.claimed.Load() - claimed; n < 6 {
		t.Errorf("%d bulk connections for the carry, want 6 or more", n)
	}
	if n := s.snapBulkFallbacks.Load(); n != 0 {
		t.Errorf("%d batches fell back to NATS", n)
	}
}
