package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// faultTarget is a real agent's target whose n-th call of op fails (or,
// with cancel set, runs after the caller's context is cancelled): a
// backend failing, or the caller going away, at that point of a carry.
type faultTarget struct {
	target
	op     string
	n      int64
	cancel context.CancelFunc // nil: the call fails
	after  bool               // the call fails after the agent ran it (its reply lost)
	delay  time.Duration      // and after this long (a slow reply)
	err    error              // the error it fails with; nil: internal
	calls  atomic.Int64
	hit    atomic.Bool
}

func (f *faultTarget) Concurrent() target { return f }

func (f *faultTarget) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	if op == f.op && f.calls.Add(1) == f.n {
		f.hit.Store(true)
		if f.after {
			f.target.Concurrent().Call(ctx, op, body, out, opts)
			time.Sleep(f.delay)
		}
		if f.cancel == nil {
			if f.err != nil {
				return f.err
			}
			return wire.Errorf(wire.CodeInternal, "", "fault injected at %s #%d", op, f.n)
		}
		f.cancel()
	}
	return f.target.Concurrent().Call(ctx, op, body, out, opts)
}

// carryGoroutines lists the goroutines a snapshot or carry started
// (snapshotOnto's own, the tally, the plan, the feed, the forwarder's
// batches, the pull's, the chunk use's renewer).
func carryGoroutines() []string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, fn := range []string{"controlplane.(*Server).snapshotOnto", "controlplane.tallyPages", "controlplane.(*Server).startPlan",
			"controlplane.(*manifestFeed).run", "controlplane.(*forwarder)", "controlplane.(*Server).pullChunks", "controlplane.startRenewer"} {
			if strings.Contains(g, fn) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// noCarryGoroutines fails t unless every goroutine a carry started ends.
func noCarryGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		gs := carryGoroutines()
		if len(gs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines of the carry still run after it returned:\n%s", len(gs), strings.Join(gs, "\n\n"))
		}
		time.Sleep(pollEvery)
	}
}

// oldOrNew fails t unless every entry of dir is its version in older or
// in newer (or, absent, absent from older), and no temporary file is left.
func oldOrNew(t *testing.T, dir string, older, newer map[string]string) (renamed int) {
	t.Helper()
	var got map[string]string
	waitFor(t, waitLong, "no temporary file on the cloud", func() bool {
		// A temporary file can vanish between the listing and its
		// Lstat while the abort removes them: walk again.
		var err error
		if got, err = digestTree(dir); err != nil {
			return false
		}
		for p := range got {
			if strings.Contains(p, files.TempPrefix) {
				return false
			}
		}
		return true
	})
	for p, d := range got {
		switch {
		case d == older[p]:
		case d == newer[p]:
			renamed++
		default:
			t.Errorf("%s on the cloud is %q: neither its old version (%q) nor the laptop's (%q)", p, d, older[p], newer[p])
		}
	}
	for p := range older {
		if _, ok := got[p]; !ok {
			if _, ok := newer[p]; ok {
				t.Errorf("%s is gone from the cloud, and the laptop has it", p)
			}
		}
	}
	return renamed
}

// carryFaultEnv is a snapshot env whose laptop has a tree of several
// chunk batches and whose cloud has an older version of every file.
func carryFaultEnv(t *testing.T) (e *snapEnv, older, newer map[string]string) {
	return carryFaultEnvBig(t, 8)
}

// carryFaultEnvBig is carryFaultEnv with big files of 1 MiB.
func carryFaultEnvBig(t *testing.T, big int) (e *snapEnv, older, newer map[string]string) {
	e = newSnapEnv(t, testConfig(t))
	writeMixedTree(t, e.laptopDir)
	for i := range big {
		p := filepath.Join(e.laptopDir, fmt.Sprintf("big/b%02d.bin", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, pseudoRandom(1<<20, uint64(300+i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	newer = treeDigest(t, e.laptopDir)
	for p, d := range newer {
		if strings.HasPrefix(d, "file") {
			writeFile(t, filepath.Join(e.cloudDir, p), "old "+p, 0o644)
		}
	}
	return e, treeDigest(t, e.cloudDir), newer
}

// Every point of a carry's overlapped steps fails in turn (the old
// backend mid-scan, mid-manifest, mid-pull; the new one as its restore
// begins, as its manifest is fed, as it plans, as chunks are forwarded, as
// it commits), and the caller's context is cancelled at each: the carry
// fails, every file on the cloud is old or new with no temporary file
// left, no snapshot is recorded unless the record was written before the
// commit failed, and every goroutine the carry started ends.
//
// The points are taken over NATS (the server's snapNoBulk), and the pull's
// and the forwarder's batches again on bulk connections (bulk): there a
// read that fails before its connection came is read over NATS instead
// (TestSnapshotBulkFallsBackToNATS), so only its cancelled case fails.
func TestCarryFailsAtEveryPoint(t *testing.T) {
	for _, pt := range []struct {
		name       string
		onDst      bool
		op         string
		n          int64
		bulk       bool
		cancelOnly bool
	}{
		{"source scan", false, wire.OpSnapScan, 1, false, false},
		{"source manifest", false, wire.OpSnapManifest, 1, false, false},
		{"source read first", false, wire.OpSnapRead, 1, false, false},
		{"source read mid-pull", false, wire.OpSnapRead, 3, false, false},
		{"target begin", true, wire.OpSnapRestoreBegin, 1, false, false},
		{"target manifest page", true, wire.OpSnapRestoreManifest, 1, false, false},
		{"target plan", true, wire.OpSnapRestoreManifest, 2, false, false},
		{"target chunks first", true, wire.OpSnapRestoreChunks, 1, false, false},
		{"target chunks mid", true, wire.OpSnapRestoreChunks, 2, false, false},
		{"target commit", true, wire.OpSnapRestoreCommit, 1, false, false},
		{"bulk source read first", false, wire.OpSnapRead, 1, true, true},
		{"bulk source read second", false, wire.OpSnapRead, 2, true, true},
		{"bulk target chunks first", true, wire.OpSnapRestoreChunks, 1, true, false},
		{"bulk target chunks second", true, wire.OpSnapRestoreChunks, 2, true, false},
	} {
		for _, cancelled := range []bool{false, true} {
			if pt.cancelOnly && !cancelled {
				continue
			}
			name := pt.name + " fails"
			if cancelled {
				name = pt.name + " cancelled"
			}
			t.Run(name, func(t *testing.T) {
				// On bulk connections, batches of 8 MiB: enough that the
				// second is forwarded while the pull goes on.
				big := 8
				if pt.bulk {
					big = 24
				}
				e, older, newer := carryFaultEnvBig(t, big)
				e.s.snapNoBulk = !pt.bulk
				var tickets atomic.Int64
				e.s.bulk.issued = func(string) { tickets.Add(1) }
				defer func() {
					if n := tickets.Load(); pt.bulk != (n > 0) {
						t.Errorf("%d bulk tickets issued", n)
					}
				}()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				src := &faultTarget{target: agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "laptop"}}}
				dst := &faultTarget{target: agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "cloud"}}}
				f := src
				if pt.onDst {
					f = dst
				}
				f.op, f.n = pt.op, pt.n
				if cancelled {
					f.cancel = cancel
				}
				before := runtime.NumGoroutine()
				sn, res, err := e.s.snapshotOnto(ctx, src, snapshotSpec{ws: "w1", agent: "laptop", session: "s1", kind: snapCarry}, dst)
				if !f.hit.Load() {
					t.Fatalf("the carry never made call %d of %s (err %v)", pt.n, pt.op, err)
				}
				if err == nil || sn != nil || res != nil {
					t.Fatalf("carry with %s: %v, %+v, %+v; want a failure", name, err, sn, res)
				}
				t.Logf("err: %v", err)
				noCarryGoroutines(t)
				t.Logf("goroutines: %d before, %d after", before, runtime.NumGoroutine())
				renamed := oldOrNew(t, e.cloudDir, older, newer)
				t.Logf("%d of %d entries new on the cloud", renamed, len(newer))
				snaps, _ := e.cl.ListSnapshots(context.Background(), "w1")
				if len(snaps) != 0 && pt.op != wire.OpSnapRestoreCommit {
					t.Fatalf("a carry that failed at %s recorded %+v", pt.op, snaps)
				}
			})
		}
	}
}

// Two carries of the same session at once: one moves the pointer, the
// other fails (epoch_mismatch) or finds it moved; the cloud holds the
// laptop's tree, and every goroutine ends.
func TestSwapCarryTwiceAtOnce(t *testing.T) {
	e := newCarryEnv(t, 0)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else if we := wire.AsError(err); we.Code != wire.CodeConflict {
			t.Fatalf("a concurrent carry failed with %v, want a conflict", err)
		}
	}
	if ok == 0 {
		t.Fatalf("neither carry succeeded: %v", errs)
	}
	sess, err := e.cl.GetSession(ctx, "w1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Active != "cloud" || sess.Epoch != 2 || sess.LastCarry == nil {
		t.Fatalf("after two carries at once: %+v", sess)
	}
	noCarryGoroutines(t)
	sameTree(t, e.laptopDir, e.cloudDir)
}

// A plain swap moves the pointer while a carry pulls its chunks: the
// carry loses the epoch's CAS (epoch_mismatch) and the session is where
// the other swap put it, without lastCarry.
func TestSwapCarryLosesEpochCAS(t *testing.T) {
	e := newCarryEnv(t, 0)
	ctx := context.Background()
	var once sync.Once
	e.s.afterChunkBatch = func() {
		once.Do(func() {
			if _, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud"}); err != nil {
				t.Error(err)
			}
		})
	}
	_, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeConflict || we.Reason != wire.ReasonEpochMismatch {
		t.Fatalf("swap: %v, want conflict/epoch_mismatch", err)
	}
	sess, err := e.cl.GetSession(ctx, "w1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Active != "cloud" || sess.Epoch != 2 || sess.LastCarry != nil {
		t.Fatalf("after the lost CAS: %+v", sess)
	}
	noCarryGoroutines(t)
}

// The snapshot's record fails (the state store) before the restore on the
// cloud committed, or after it did (the commit runs while the record is
// written): the swap fails, the pointer stays, no snapshot is listed, and
// every file on the cloud is old or new (after the commit: all new, as
// the contract allows; before this overlap the commit waited for the
// record and never ran).
func TestSwapCarryRecordFails(t *testing.T) {
	for _, afterCommit := range []bool{false, true} {
		t.Run(fmt.Sprintf("after commit %v", afterCommit), func(t *testing.T) {
			e := newCarryEnv(t, 0)
			ctx := context.Background()
			newer := treeDigest(t, e.laptopDir)
			for p, d := range newer {
				if strings.HasPrefix(d, "file") {
					writeFile(t, filepath.Join(e.cloudDir, p), "old "+p, 0o644)
				}
			}
			older := treeDigest(t, e.cloudDir)
			committed := false
			e.s.beforeSnapRecord = func() error {
				if afterCommit {
					deadline := time.Now().Add(waitLong)
					for time.Now().Before(deadline) {
						// Not treeDigest: this runs on the server's
						// goroutine, where t.Fatal cannot stop the test,
						// and the restore is renaming temporary files
						// meanwhile (an error is a walk to do again).
						if d, err := digestTree(e.cloudDir); err == nil && len(d) == len(newer) && d["latest"] == newer["latest"] && d["data/run"] == newer["data/run"] {
							committed = true
							break
						}
						time.Sleep(pollEvery)
					}
				}
				return wire.Errorf(wire.CodeUnavailable, wire.ReasonStateUnavailable, "record refused by the test")
			}
			_, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
			if we := wire.AsError(err); err == nil || we.Code != wire.CodeUnavailable {
				t.Fatalf("swap: %v, want unavailable", err)
			}
			if afterCommit != committed {
				t.Fatalf("the restore committed before the record: %v, want %v", committed, afterCommit)
			}
			sess, err := e.cl.GetSession(ctx, "w1", "s1")
			if err != nil {
				t.Fatal(err)
			}
			if sess.Active != "laptop" || sess.Epoch != 1 || sess.LastCarry != nil {
				t.Fatalf("after the failed record: %+v", sess)
			}
			if snaps, _ := e.cl.ListSnapshots(ctx, "w1"); len(snaps) != 0 {
				t.Fatalf("a failed record listed %+v", snaps)
			}
			noCarryGoroutines(t)
			renamed := oldOrNew(t, e.cloudDir, older, newer)
			t.Logf("%d of %d entries new on the cloud", renamed, len(newer))
		})
	}
}

// A carry whose restore's plan fails stores nothing: the chunks it pulled
// meanwhile would be in the store uncounted, and the next carry, finding
// them there, would not count them either (the usage then falls short of
// what the recorded snapshots hold, and the quota with it).
func TestCarryFailedPlanStoresNothing(t *testing.T) {
	e := newCarryEnv(t, 0)
	ctx := context.Background()
	carry := carrySwap(t, e)
	carry("cloud")
	// New content on the cloud, several batches of it.
	for i := range 4 {
		p := filepath.Join(e.cloudDir, fmt.Sprintf("new/n%d.bin", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, pseudoRandom(1<<20, uint64(500+i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := &faultTarget{target: agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "cloud"}}, op: wire.OpSnapRead}
	dst := &faultTarget{target: agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "laptop"}}, op: wire.OpSnapRestoreManifest, n: 2, after: true, delay: 500 * time.Millisecond}
	_, _, err := e.s.snapshotOnto(ctx, src, snapshotSpec{ws: "w1", agent: "cloud", session: "s1", backend: "cloud", kind: snapCarry}, dst)
	if err == nil || !dst.hit.Load() {
		t.Fatalf("a carry whose plan failed: %v (plan reached: %v)", err, dst.hit.Load())
	}
	t.Logf("the failed carry: %v", err)
	t.Logf("chunk reads of the failed carry: %d", src.calls.Load())
	carry("laptop")
	sameTree(t, e.cloudDir, e.laptopDir)
	if used, stored := usageAndStored(t, e); used != stored {
		t.Fatalf("usage %d, the recorded snapshots hold %d", used, stored)
	}
}

// The caller goes away as the snapshot is about to be recorded (the
// restore's delivery and commit under way): the carry fails, nothing is
// recorded, the cloud is old or new without temporary files, and every
// goroutine ends.
func TestCarryCancelledAtRecord(t *testing.T) {
	e, older, newer := carryFaultEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.s.beforeSnapRecord = func() error { cancel(); return nil }
	src := agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "laptop"}}
	dst := agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "cloud"}}
	sn, res, err := e.s.snapshotOnto(ctx, src, snapshotSpec{ws: "w1", agent: "laptop", session: "s1", kind: snapCarry}, dst)
	if err == nil || sn != nil || res != nil {
		t.Fatalf("a carry cancelled at its record: %v, %+v, %+v", err, sn, res)
	}
	t.Logf("err: %v", err)
	noCarryGoroutines(t)
	t.Logf("%d of %d entries new on the cloud", oldOrNew(t, e.cloudDir, older, newer), len(newer))
	if snaps, _ := e.cl.ListSnapshots(context.Background(), "w1"); len(snaps) != 0 {
		t.Fatalf("a cancelled carry recorded %+v", snaps)
	}
}
