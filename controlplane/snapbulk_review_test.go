package controlplane

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// bulkHostile is a real agent's target whose fs.snap.read batches on bulk
// connections are answered by the test with the agent's key, as a hostile
// agent would: trickle sends the real content a byte at a time, slowly,
// until the connection is closed, then answers; otherwise it sends the
// content with one byte changed and answers at once or, with hang, never
// (until the call ends).
type bulkHostile struct {
	target
	s       *Server
	ag      subjects.Agent
	seed    []byte
	trickle bool
	hang    bool
	took    atomic.Int64 // bulk connections made
}

func (b *bulkHostile) Concurrent() target { return b }

func (b *bulkHostile) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	req, ok := body.(*wire.SnapReadRequest)
	if op != wire.OpSnapRead || !ok || req.Ticket == "" {
		return b.target.Concurrent().Call(ctx, op, body, out, opts)
	}
	data, conn, err := openHostileBulk(ctx, b.s, b.target, b.ag, b.seed, op, req, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	// A call ends with its context, as the real one (over NATS) does: a
	// write the control plane no longer reads must not outlive it.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	b.took.Add(1)
	if b.trickle {
		for i := range data {
			if _, err := conn.Write(data[i : i+1]); err != nil {
				return nil
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	data[len(data)/2] ^= 0x20
	_, _ = conn.Write(data)
	if b.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// hostileEnv is a control plane with workspace w1 and a real agent laptop
// whose tree is more than bulkMin; src is its target answered by hostile.
func hostileEnv(t *testing.T, hostile *bulkHostile) (*Server, *bulkHostile) {
	s := startServer(t, testConfig(t))
	cl := adminClient(s)
	if _, err := cl.CreateWorkspace(context.Background(), "w1"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeMixedTree(t, dir)
	writeBigFiles(t, dir, 10, 4000)
	ta := enrollAgent(t, s, "w1", "laptop")
	runAgent(t, s, &enroll.Config{URL: s.URL(), Workspace: "w1", Agent: "laptop", NATSURLs: ta.urls, JWT: ta.jwt, Seed: string(ta.seed)}, dir)
	ag := subjects.Agent{Workspace: "w1", ID: "laptop"}
	hostile.target, hostile.s, hostile.ag, hostile.seed = agentTarget{rpc: s.rpc, ag: ag}, s, ag, ta.seed
	return s, hostile
}

// An agent that sends a batch's chunks on its bulk connection a byte at a
// time (a slow loris) does not hold the pull, its buffers and the
// snapshot longer than a batch over NATS may take (snapBulkWait here,
// fileCallTimeout in use): the batch's connection is closed and the rest
// read over NATS.
func TestSnapshotBulkSlowLorisBounded(t *testing.T) {
	s, src := hostileEnv(t, &bulkHostile{trickle: true})
	s.snapBulkWait = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	sn, err := s.takeSnapshot(ctx, src, snapshotSpec{ws: "w1", agent: "laptop", kind: snapManual})
	if err != nil {
		t.Fatalf("snapshot: %v (a slow bulk connection held the pull)", err)
	}
	if src.took.Load() == 0 {
		t.Fatal("no batch came on a bulk connection")
	}
	if n := s.snapBulkFallbacks.Load(); n == 0 {
		t.Error("the pull did not fall back to NATS")
	}
	if sn.NewBytes != sn.Bytes {
		t.Errorf("stored %d of %d bytes", sn.NewBytes, sn.Bytes)
	}
}

// An agent that sends a chunk not its name on a bulk connection and then
// never answers its fs.snap.read does not hold the snapshot until the
// call times out: the pull fails at once with conflict/source_changed.
func TestSnapshotBulkWrongContentNoReply(t *testing.T) {
	s, src := hostileEnv(t, &bulkHostile{hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.takeSnapshot(ctx, src, snapshotSpec{ws: "w1", agent: "laptop", kind: snapManual})
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeConflict || we.Reason != wire.ReasonSourceChanged {
		t.Fatalf("snapshot: %v, want conflict/source_changed at once", err)
	}
	if src.took.Load() == 0 {
		t.Fatal("no batch came on a bulk connection")
	}
}

// A snapshot whose first batch's bulk connection breaks while the agent
// sends on it (the real agent's sendfile fails) reads that batch from its
// first chunk not taken, and the rest, over NATS: the snapshot is whole,
// as PROTOCOL.md says of a connection that broke.
func TestSnapshotBulkConnectionCutMidBatch(t *testing.T) {
	e := newSnapEnv(t, testConfig(t))
	writeMixedTree(t, e.laptopDir)
	writeBigFiles(t, e.laptopDir, 12, 6000)
	var cut atomic.Int64
	e.s.bulk.pulled = func(c net.Conn) {
		if cut.Add(1) == 1 {
			// Cut while the agent sends (8 MiB: more than the
			// connection's buffers hold).
			c.Close()
		}
	}
	src := agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "laptop"}}
	sn, err := e.s.takeSnapshot(context.Background(), src, snapshotSpec{ws: "w1", agent: "laptop", kind: snapManual})
	if err != nil {
		t.Fatalf("snapshot after a bulk connection broke: %v", err)
	}
	if cut.Load() == 0 {
		t.Fatal("no batch came on a bulk connection")
	}
	if n := e.s.snapBulkFallbacks.Load(); n != 1 {
		t.Errorf("%d pulls fell back to NATS, want 1", n)
	}
	if sn.NewBytes != sn.Bytes {
		t.Errorf("stored %d of %d bytes", sn.NewBytes, sn.Bytes)
	}
	if _, err := e.cloud.RestoreSnapshot(context.Background(), sn.ID, client.RestoreSnapshotRequest{Delete: true}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, e.laptopDir, e.cloudDir)
}
