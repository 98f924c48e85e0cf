package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/wire"
)

// stoppableAgent is realAgent with a stop: a clean stop (goodbye) when
// the test calls it, or at the test's end.
func stoppableAgent(t *testing.T, s *Server, ws, id, root string) (stop func()) {
	t.Helper()
	ta := enrollAgent(t, s, ws, id)
	ident := &enroll.Config{URL: s.URL(), Workspace: ta.ag.Workspace, Agent: ta.ag.ID, NATSURLs: ta.urls, JWT: ta.jwt, Seed: string(ta.seed)}
	a, err := agent.New(agent.Config{Identity: ident, Root: root, HeartbeatInterval: heartbeatEvery, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(waitLong):
				t.Errorf("agent %s did not stop", id)
			}
		})
	}
	t.Cleanup(stop)
	waitFor(t, waitLong, "agent online", func() bool { return s.presence.Get(ident.AgentID()).Status == "online" })
	return stop
}

// carryEnv is a session over two real agents: "laptop" (active) and
// "cloud".
type carryEnv struct {
	s                   *Server
	cl                  *client.Client
	laptopDir, cloudDir string
	stopLaptop          func()
	stopCloud           func()
}

func newCarryEnv(t *testing.T, everyMs int64) *carryEnv {
	t.Helper()
	s := startServer(t, testConfig(t))
	cl := adminClient(s)
	ctx := context.Background()
	if _, err := cl.CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	e := &carryEnv{s: s, cl: cl, laptopDir: t.TempDir(), cloudDir: t.TempDir()}
	writeMixedTree(t, e.laptopDir)
	e.stopLaptop = stoppableAgent(t, s, "w1", "laptop", e.laptopDir)
	e.stopCloud = stoppableAgent(t, s, "w1", "cloud", e.cloudDir)
	_, err := cl.CreateSession(ctx, "w1", client.CreateSessionRequest{ID: "s1", Active: "laptop", SnapshotEveryMs: everyMs,
		Backends: map[string]client.SessionBackend{"laptop": {Kind: "agent", Agent: "laptop"}, "cloud": {Kind: "agent", Agent: "cloud"}}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestSwapCarryThereAndBack(t *testing.T) {
	e := newCarryEnv(t, 0)
	ctx := context.Background()
	writeFile(t, filepath.Join(e.cloudDir, "leftover"), "from an earlier session", 0o644)
	sess, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
	if err != nil {
		t.Fatal(err)
	}
	lc := sess.LastCarry
	if sess.Active != "cloud" || sess.Epoch != 2 || lc == nil || lc.From != "laptop" || lc.Files != 45 {
		t.Fatalf("after the carry to the cloud: %+v, lastCarry %+v", sess, lc)
	}
	snaps, _ := e.cl.ListSnapshots(ctx, "w1")
	if len(snaps) != 1 || lc.TransferredBytes != snaps[0].Bytes || lc.Snapshot != snaps[0].ID {
		t.Fatalf("first carry sent %d bytes, snapshots %+v", lc.TransferredBytes, snaps)
	}
	sameTree(t, e.laptopDir, e.cloudDir)

	// Work on the cloud: one file edited in place, one added, one removed.
	f, err := os.OpenFile(filepath.Join(e.cloudDir, "data/blob2.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("edited on the cloud"), 300_000)
	f.Close()
	writeFile(t, filepath.Join(e.cloudDir, "src/new.go"), "package pkg\n", 0o644)
	os.Remove(filepath.Join(e.cloudDir, "src/pkg1/file1.go"))

	sess, err = e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "laptop", Carry: true})
	if err != nil {
		t.Fatal(err)
	}
	lc = sess.LastCarry
	if sess.Active != "laptop" || lc.From != "cloud" {
		t.Fatalf("after the carry back: %+v, lastCarry %+v", sess, lc)
	}
	// Only the edited chunk and the new file cross to the laptop.
	if lc.TransferredBytes == 0 || lc.TransferredBytes > 2*256<<10+int64(len("package pkg\n")) {
		t.Fatalf("the carry back sent %d bytes, want the changed chunks only", lc.TransferredBytes)
	}
	snaps, _ = e.cl.ListSnapshots(ctx, "w1")
	if last := snaps[len(snaps)-1]; last.NewBytes != lc.TransferredBytes {
		t.Fatalf("the carry back stored %d new bytes and sent %d", last.NewBytes, lc.TransferredBytes)
	}
	sameTree(t, e.cloudDir, e.laptopDir)
}

// A carry begins its restore on the new backend before it scans the old
// one; when that restore is gone by the time the manifest is complete
// (here the cloud's agent restarted; a scan longer than the agent keeps an
// idle handle does the same), the carry begins it again and completes.
func TestSwapCarryRestoreBegunAgain(t *testing.T) {
	e := newCarryEnv(t, 0)
	ctx := context.Background()
	restarted := false
	e.s.afterChunkLookup = func() {
		if restarted {
			return
		}
		restarted = true
		e.stopCloud()
		e.stopCloud = stoppableAgent(t, e.s, "w1", "cloud", e.cloudDir)
	}
	sess, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
	if err != nil {
		t.Fatal(err)
	}
	if !restarted || sess.Active != "cloud" || sess.LastCarry == nil || sess.LastCarry.Files != 45 {
		t.Fatalf("after the carry: %+v, lastCarry %+v (agent restarted: %v)", sess, sess.LastCarry, restarted)
	}
	sameTree(t, e.laptopDir, e.cloudDir)
}

// The laptop stops mid-session: a swap with carry restores the latest
// periodic snapshot, and lastCarry says from when.
func TestSwapCarryFromPeriodicSnapshot(t *testing.T) {
	e := newCarryEnv(t, 1000)
	ctx := context.Background()
	var periodic []client.Snapshot
	waitFor(t, waitLong, "a periodic snapshot", func() bool {
		snaps, _ := e.cl.ListSnapshots(ctx, "w1")
		periodic = snaps
		return len(snaps) > 0
	})
	want := t.TempDir()
	copyTree(t, e.laptopDir, want)
	e.stopLaptop()
	// What the laptop wrote after its last snapshot is gone with it.
	sess, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
	if err != nil {
		t.Fatal(err)
	}
	snaps, _ := e.cl.ListSnapshots(ctx, "w1")
	latest := snaps[len(snaps)-1]
	lc := sess.LastCarry
	if lc == nil || lc.Snapshot != latest.ID || latest.Kind != "periodic" || !lc.TakenAt.Equal(latest.CreatedAt) || lc.From != "laptop" {
		t.Fatalf("lastCarry %+v, latest snapshot %+v (first seen %+v)", lc, latest, periodic)
	}
	sameTree(t, want, e.cloudDir)
}

// With the old backend offline and no snapshot, a swap with carry is 409
// no_snapshot and the pointer stays.
func TestSwapCarryNoSnapshot(t *testing.T) {
	e := newCarryEnv(t, 0)
	ctx := context.Background()
	e.stopLaptop()
	_, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeConflict || we.Reason != wire.ReasonNoSnapshot {
		t.Fatalf("got %v, want conflict/no_snapshot", err)
	}
	sess, err := e.cl.GetSession(ctx, "w1", "s1")
	if err != nil || sess.Active != "laptop" || sess.Epoch != 1 || sess.LastCarry != nil {
		t.Fatalf("after a refused carry: %+v, %v", sess, err)
	}
	if es, _ := os.ReadDir(e.cloudDir); len(es) != 0 {
		t.Fatalf("a refused carry wrote %v to the cloud", es)
	}
}

// copyTree copies dir src to dst with modes and links, for a later compare.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			return os.Symlink(l, to)
		case fi.IsDir():
			return os.MkdirAll(to, fi.Mode().Perm())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, fi.Mode().Perm())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Periodic snapshots are kept newest keepPeriodic; older ones are deleted
// with their chunks.
func TestPeriodicSnapshotsPruned(t *testing.T) {
	e := newCarryEnv(t, 1000)
	ctx := context.Background()
	var first string
	waitFor(t, waitLong, "a periodic snapshot", func() bool {
		snaps, _ := e.cl.ListSnapshots(ctx, "w1")
		if len(snaps) > 0 {
			first = snaps[0].ID
		}
		return first != ""
	})
	waitFor(t, 4*waitLong, "the first periodic snapshot pruned", func() bool {
		// A new one and the pruning of the oldest are not one step: more
		// than keepPeriodic may be seen for a moment.
		snaps, _ := e.cl.ListSnapshots(ctx, "w1")
		for _, s := range snaps {
			if s.ID == first {
				return false
			}
		}
		return len(snaps) == keepPeriodic
	})
	sess, err := e.cl.GetSession(ctx, "w1", "s1")
	if err != nil || sess.SnapshotEveryMs != 1000 {
		t.Fatalf("session %+v, %v: want snapshotEveryMs 1000", sess, err)
	}
}
