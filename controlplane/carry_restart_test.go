package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// beforeCall runs do once, just before call n of op goes to the agent.
type beforeCall struct {
	target
	op    string
	n     int64
	do    func()
	calls atomic.Int64
}

func (b *beforeCall) Concurrent() target { return b }

func (b *beforeCall) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	if op == b.op && b.calls.Add(1) == b.n {
		b.do()
	}
	return b.target.Concurrent().Call(ctx, op, body, out, opts)
}

// A target agent that restarts in the middle of a restore (its open
// restore is gone with the process): before the plan the carry begins it
// again and completes; later it fails as unavailable (restore_lost once
// the restore is found gone, agent_offline for a call made while the
// agent was away), a retry's matter, never not-found: a router that read
// 404 from a swap would take the session or the cloud for gone. Every
// file is old or new.
func TestCarryTargetRestartedMidRestore(t *testing.T) {
	for _, pt := range []struct {
		op     string
		n      int64
		reason string // "": the carry completes
	}{
		{wire.OpSnapRestoreManifest, 1, ""},
		{wire.OpSnapRestoreChunks, 2, "any"},
		{wire.OpSnapRestoreCommit, 1, wire.ReasonRestoreLost},
	} {
		t.Run(fmt.Sprintf("%s#%d", pt.op, pt.n), func(t *testing.T) {
			e := newCarryEnv(t, 0)
			for i := range 8 {
				p := filepath.Join(e.laptopDir, fmt.Sprintf("big/b%02d.bin", i))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, pseudoRandom(1<<20, uint64(300+i)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			older, newer := treeDigest(t, e.cloudDir), treeDigest(t, e.laptopDir)
			src := agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "laptop"}}
			dst := &beforeCall{target: agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "cloud"}}, op: pt.op, n: pt.n,
				do: func() {
					e.stopCloud()
					e.stopCloud = stoppableAgent(t, e.s, "w1", "cloud", e.cloudDir)
				}}
			_, _, err := e.s.snapshotOnto(context.Background(), src, snapshotSpec{ws: "w1", agent: "laptop", session: "s1", kind: snapCarry}, dst)
			if dst.calls.Load() < pt.n {
				t.Fatalf("the carry made %d calls of %s, not %d (err %v)", dst.calls.Load(), pt.op, pt.n, err)
			}
			if pt.reason == "" {
				if err != nil {
					t.Fatalf("carry onto a cloud restarted before %s #%d: %v, want it carried", pt.op, pt.n, err)
				}
				sameTree(t, e.cloudDir, e.laptopDir)
				return
			}
			we := wire.AsError(err)
			if err == nil || we.Code != wire.CodeUnavailable || (pt.reason != "any" && we.Reason != pt.reason) {
				t.Fatalf("carry onto a cloud restarted before %s #%d: %v, want unavailable/%s", pt.op, pt.n, err, pt.reason)
			}
			if we.Reason == wire.ReasonRestoreLost && !strings.Contains(err.Error(), "the agent restarted") {
				t.Errorf("restore_lost does not say the agent restarted: %v", err)
			}
			t.Logf("err: %v", err)
			noCarryGoroutines(t)
			oldOrNew(t, e.cloudDir, older, newer)
		})
	}
}

// The same for a snapshot whose agent restarts between its scan and its
// manifest, and for a restore of a recorded snapshot whose agent restarts
// before the commit: 503 restore_lost, nothing recorded, every file old
// or new.
func TestSnapshotAndRestoreAgentRestarted(t *testing.T) {
	e := newCarryEnv(t, 0)
	ctx := context.Background()
	spec := snapshotSpec{ws: "w1", agent: "laptop", kind: snapManual}
	laptop := &beforeCall{target: agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "laptop"}}, op: wire.OpSnapManifest, n: 1,
		do: func() {
			e.stopLaptop()
			e.stopLaptop = stoppableAgent(t, e.s, "w1", "laptop", e.laptopDir)
		}}
	_, err := e.s.takeSnapshot(ctx, laptop, spec)
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeUnavailable || we.Reason != wire.ReasonRestoreLost {
		t.Fatalf("a snapshot whose agent restarted after its scan: %v, want unavailable/restore_lost", err)
	}
	if snaps, _ := e.cl.ListSnapshots(ctx, "w1"); len(snaps) != 0 {
		t.Fatalf("the failed snapshot was recorded: %+v", snaps)
	}
	sn, err := e.s.takeSnapshot(ctx, agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "laptop"}}, spec)
	if err != nil {
		t.Fatal(err)
	}
	older, newer := treeDigest(t, e.cloudDir), treeDigest(t, e.laptopDir)
	cloud := &beforeCall{target: agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "cloud"}}, op: wire.OpSnapRestoreCommit, n: 1,
		do: func() {
			e.stopCloud()
			e.stopCloud = stoppableAgent(t, e.s, "w1", "cloud", e.cloudDir)
		}}
	_, err = e.s.restoreSnapshot(ctx, cloud, "w1", sn.ID, client.RestoreSnapshotRequest{Delete: true})
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeUnavailable || we.Reason != wire.ReasonRestoreLost {
		t.Fatalf("a restore whose agent restarted before its commit: %v, want unavailable/restore_lost", err)
	}
	t.Logf("err: %v", err)
	oldOrNew(t, e.cloudDir, older, newer)
}
