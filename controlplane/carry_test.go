package controlplane

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
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
	return newCarryEnvConfig(t, everyMs, nil)
}

// newCarryEnvConfig is newCarryEnv whose control plane's configuration
// configure changes, knowing the laptop's tree (written first).
func newCarryEnvConfig(t *testing.T, everyMs int64, configure func(cfg *Config, laptopDir string)) *carryEnv {
	t.Helper()
	laptopDir := t.TempDir()
	writeMixedTree(t, laptopDir)
	cfg := testConfig(t)
	if configure != nil {
		configure(&cfg, laptopDir)
	}
	s := startServer(t, cfg)
	cl := adminClient(s)
	ctx := context.Background()
	if _, err := cl.CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	e := &carryEnv{s: s, cl: cl, laptopDir: laptopDir, cloudDir: t.TempDir()}
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

// A session's next carry knows the chunks of its last snapshot (the use
// lease keeps them while that snapshot's record exists) and does not list
// every chunk of the store; a chunk it does not know of but the store
// holds (an older snapshot's) is sent but not stored or counted again, so
// the usage stays the bytes the store holds. Once that last snapshot is
// deleted, the next carry lists the store again.
func TestSwapCarryKnowsLastSnapshotChunks(t *testing.T) {
	e := newCarryEnv(t, 0)
	ctx := context.Background()
	const blob = "data/blob2.bin"
	orig, err := os.ReadFile(filepath.Join(e.laptopDir, blob))
	if err != nil {
		t.Fatal(err)
	}
	swap := carrySwap(t, e)
	usageIsStored := func(when string) {
		t.Helper()
		if used, want := usageAndStored(t, e); used != want {
			t.Fatalf("%s: usage %d, want the %d bytes the snapshots name", when, used, want)
		}
	}
	lc1 := swap("cloud") // nothing known: the store is listed
	if n := e.s.chunkListings.Load(); n != 1 {
		t.Fatalf("the first carry listed the store %d times, want 1", n)
	}
	// On the cloud the blob gets new content: new chunks only.
	writeFile(t, filepath.Join(e.cloudDir, blob), string(pseudoRandom(len(orig), 77)), 0o600)
	swap("laptop")
	sn2 := lastSnapshot(t, e)
	if sn2.NewBytes != int64(len(orig)) {
		t.Fatalf("the second carry stored %d new bytes, want the blob's %d", sn2.NewBytes, len(orig))
	}
	// On the laptop the blob is put back: its chunks are the first
	// snapshot's (in the store), not the last one's.
	writeFile(t, filepath.Join(e.laptopDir, blob), string(orig), 0o600)
	lc3 := swap("cloud")
	sn3 := lastSnapshot(t, e)
	if n := e.s.chunkListings.Load(); n != 1 {
		t.Fatalf("the later carries listed the store: %d listings, want 1", n)
	}
	if sn3.NewBytes != 0 || lc3.TransferredBytes != int64(len(orig)) {
		t.Fatalf("the carry of the put-back blob stored %d new bytes (want 0: the store held them) and sent %d (want %d)",
			sn3.NewBytes, lc3.TransferredBytes, len(orig))
	}
	sameTree(t, e.laptopDir, e.cloudDir)
	usageIsStored("after three carries")
	if used, _, _ := e.s.snaps.usage(ctx, "w1"); used != lc1.TransferredBytes+sn2.NewBytes {
		t.Fatalf("usage %d, want %d", used, lc1.TransferredBytes+sn2.NewBytes)
	}

	// The last snapshot deleted, the next carry cannot count on its
	// chunks: it lists the store.
	if err := e.cl.DeleteSnapshot(ctx, "w1", sn3.ID); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.cloudDir, "src/after-delete.go"), "package pkg\n// after the delete\n", 0o644)
	swap("laptop")
	if n := e.s.chunkListings.Load(); n != 2 {
		t.Fatalf("the carry after its last snapshot was deleted listed the store %d times in all, want 2", n)
	}
	sameTree(t, e.cloudDir, e.laptopDir)
	usageIsStored("after the delete and a carry")
}

// lastSnapshot is the newest snapshot of w1.
func lastSnapshot(t *testing.T, e *carryEnv) client.Snapshot {
	t.Helper()
	snaps, err := e.cl.ListSnapshots(context.Background(), "w1")
	if err != nil || len(snaps) == 0 {
		t.Fatalf("snapshots: %+v, %v", snaps, err)
	}
	return snaps[len(snaps)-1]
}

// carrySwap returns a swap of session s1 with carry to a backend, which
// checks the session moved and returns its lastCarry.
func carrySwap(t *testing.T, e *carryEnv) func(to string) *client.LastCarry {
	return func(to string) *client.LastCarry {
		t.Helper()
		sess, err := e.cl.Swap(context.Background(), "w1", "s1", client.SwapRequest{To: to, Carry: true})
		if err != nil {
			t.Fatal(err)
		}
		if sess.Active != to || sess.LastCarry == nil {
			t.Fatalf("after the carry to %s: %+v", to, sess)
		}
		return sess.LastCarry
	}
}

// usageAndStored is w1's snapshot usage and the bytes of the distinct
// chunks its recorded snapshots name (what the usage should be).
func usageAndStored(t *testing.T, e *carryEnv) (used, stored int64) {
	t.Helper()
	ctx := context.Background()
	snaps, err := e.cl.ListSnapshots(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sn := range snaps {
		entries, err := e.s.snaps.manifest(ctx, "w1", sn.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			for i, n := range en.Sizes {
				if h := string(en.Sums[i*wire.SumSize : (i+1)*wire.SumSize]); !seen[h] {
					seen[h] = true
					stored += int64(n)
				}
			}
		}
	}
	used, _, err = e.s.snaps.usage(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	return used, stored
}

// A carry whose bound on new bytes (the chunks its session's last
// snapshot does not have) is over the workspace's limit lists the store
// for the exact figure: a file put back as an older snapshot had it adds
// nothing and fits. A change that does not fit is 507 and the pointer
// stays.
func TestSwapCarryQuotaExactWhenBoundOver(t *testing.T) {
	const blob = "data/blob2.bin"
	var tree, blobSize int64
	e := newCarryEnvConfig(t, 0, func(cfg *Config, laptopDir string) {
		filepath.WalkDir(laptopDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				fi, _ := d.Info()
				tree += fi.Size()
				if strings.HasSuffix(p, blob) {
					blobSize = fi.Size()
				}
			}
			return nil
		})
		// Room for the tree and one new version of the blob, and
		// less than half the blob more.
		cfg.SnapshotQuota = tree + blobSize + blobSize/2
	})
	ctx := context.Background()
	swap := carrySwap(t, e)
	orig, err := os.ReadFile(filepath.Join(e.laptopDir, blob))
	if err != nil {
		t.Fatal(err)
	}
	swap("cloud")
	writeFile(t, filepath.Join(e.cloudDir, blob), string(pseudoRandom(len(orig), 78)), 0o600)
	swap("laptop")
	if used, _ := usageAndStored(t, e); used != tree+blobSize {
		t.Fatalf("usage %d after two carries, want %d", used, tree+blobSize)
	}
	// The blob put back: its chunks are not the last snapshot's, and
	// counting them as new would go over the limit.
	writeFile(t, filepath.Join(e.laptopDir, blob), string(orig), 0o600)
	lc := swap("cloud")
	if n := e.s.chunkListings.Load(); n != 2 {
		t.Fatalf("the store was listed %d times, want 2 (the first carry, and the one over its bound)", n)
	}
	if lc.TransferredBytes != blobSize {
		t.Fatalf("the carry of the put-back blob sent %d bytes, want %d", lc.TransferredBytes, blobSize)
	}
	sameTree(t, e.laptopDir, e.cloudDir)
	if used, stored := usageAndStored(t, e); used != tree+blobSize || used != stored {
		t.Fatalf("usage %d, want %d (the store holds %d)", used, tree+blobSize, stored)
	}
	// A new version that does not fit: 507, nothing moved.
	writeFile(t, filepath.Join(e.cloudDir, blob), string(pseudoRandom(len(orig), 79)), 0o600)
	_, err = e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "laptop", Carry: true})
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeInsufficientStorage || we.Reason != wire.ReasonSnapshotQuota {
		t.Fatalf("a carry over the limit: %v, want insufficient_storage/snapshot_quota", err)
	}
	if sess, err := e.cl.GetSession(ctx, "w1", "s1"); err != nil || sess.Active != "cloud" {
		t.Fatalf("after the refused carry: %+v, %v", sess, err)
	}
	if used, stored := usageAndStored(t, e); used != stored {
		t.Fatalf("usage %d after the refused carry, the store holds %d", used, stored)
	}
}

// The source's tree changes while a carry pulls its chunks (after the
// first batch, with the restore on the cloud planned at the same time):
// the swap fails with source_changed, the pointer stays, and every file
// on the cloud is its old version or the laptop's, none half-written, no
// temporary file left.
// Over NATS and on bulk connections (TestCarryPullsOnBulkConnections).
func TestSwapCarrySourceFailsMidway(t *testing.T) {
	t.Run("nats", func(t *testing.T) { swapCarrySourceFailsMidway(t, false) })
	t.Run("bulk", func(t *testing.T) { swapCarrySourceFailsMidway(t, true) })
}

func swapCarrySourceFailsMidway(t *testing.T, bulk bool) {
	// Enough batches (2 MiB each over NATS, 8 MiB on bulk connections)
	// that some are read after the change, past the window of those in
	// flight.
	n := 24
	if bulk {
		n = 72
	}
	e := newCarryEnvConfig(t, 0, func(_ *Config, laptopDir string) {
		for i := range n {
			p := filepath.Join(laptopDir, fmt.Sprintf("big/b%02d.bin", i))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, pseudoRandom(1<<20, uint64(100+i)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	e.s.snapNoBulk = !bulk
	claimed := e.s.bulk.claimed.Load()
	defer func() {
		if c := e.s.bulk.claimed.Load() - claimed; bulk != (c > 0) {
			t.Errorf("%d bulk connections", c)
		}
	}()
	ctx := context.Background()
	newer := treeDigest(t, e.laptopDir)
	// The cloud holds an older version of every file.
	older := map[string]string{}
	for p, d := range newer {
		if strings.HasPrefix(d, "file") {
			writeFile(t, filepath.Join(e.cloudDir, p), "old "+p, 0o644)
		}
	}
	for p, d := range treeDigest(t, e.cloudDir) {
		older[p] = d
	}
	var once sync.Once
	e.s.afterChunkBatch = func() {
		once.Do(func() {
			for i := range n {
				p := filepath.Join(e.laptopDir, fmt.Sprintf("big/b%02d.bin", i))
				if err := os.WriteFile(p, pseudoRandom(1<<20, uint64(200+i)), 0o644); err != nil {
					t.Error(err)
				}
			}
		})
	}
	_, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeConflict || we.Reason != wire.ReasonSourceChanged {
		t.Fatalf("swap: %v, want conflict/source_changed", err)
	}
	sess, err := e.cl.GetSession(ctx, "w1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Active != "laptop" || sess.Epoch != 1 || sess.LastCarry != nil {
		t.Fatalf("after the failed carry: %+v", sess)
	}
	if snaps, _ := e.cl.ListSnapshots(ctx, "w1"); len(snaps) != 0 {
		t.Fatalf("a failed carry recorded %+v", snaps)
	}
	// The restore's abort is sent as the swap fails; the agent ends it
	// (removing its temporary files) as it gets it.
	var got map[string]string
	waitFor(t, waitLong, "no temporary file on the cloud", func() bool {
		// A temporary file can vanish between the listing and its
		// Lstat while the abort removes them: walk again.
		var err error
		if got, err = digestTree(e.cloudDir); err != nil {
			return false
		}
		for p := range got {
			if strings.Contains(p, files.TempPrefix) {
				return false
			}
		}
		return true
	})
	renamed := 0
	for p, d := range got {
		switch {
		case d == older[p]:
		case d == newer[p]:
			renamed++
		default:
			t.Errorf("%s on the cloud is %s: neither its old version (%s) nor the laptop's (%s)", p, d, older[p], newer[p])
		}
	}
	t.Logf("%d of %d entries new on the cloud", renamed, len(got))
}

// hostileSource is a snapshot source (a target) that serves a manifest
// the restore must refuse, with chunks that are their names: a carry
// pulls them while the restore plans.
type hostileSource struct {
	entries []wire.SnapEntry
	data    []byte // the one chunk every file is
	reads   atomic.Int64
}

func (h *hostileSource) Name() string       { return "hostile" }
func (h *hostileSource) Epoch() uint64      { return 0 }
func (h *hostileSource) LastAgent() string  { return "hostile" }
func (h *hostileSource) Concurrent() target { return h }

func (h *hostileSource) Call(_ context.Context, op string, body, out any, _ rpc.CallOptions) error {
	switch op {
	case wire.OpSnapScan:
		*out.(*wire.SnapScanResult) = wire.SnapScanResult{Handle: "hs", Entries: len(h.entries), Files: len(h.entries), Bytes: int64(len(h.data))}
	case wire.OpSnapManifest:
		*out.(*wire.SnapManifestPage) = wire.SnapManifestPage{Entries: h.entries, Next: len(h.entries)}
	case wire.OpSnapRead:
		h.reads.Add(1)
		var data []byte
		for range len(body.(*wire.SnapReadRequest).Sums) / wire.SumSize {
			data = append(data, h.data...)
		}
		*out.(*wire.SnapReadResult) = wire.SnapReadResult{Data: data}
	case wire.OpSnapClose:
	default:
		return fmt.Errorf("hostile source: unexpected %s", op)
	}
	return nil
}

// A carry's restore begins before the source's snapshot is complete and
// plans while the chunks are pulled; a manifest it must refuse (paths out
// of the root, writes through a link it makes) is still refused before
// anything is written on the new backend, and no snapshot is recorded.
func TestCarryRefusesHostileManifest(t *testing.T) {
	e := newSnapEnv(t, testConfig(t))
	ctx := context.Background()
	data := []byte("hostile content")
	sum := sha256.Sum256(data)
	file := func(p string) wire.SnapEntry {
		return wire.SnapEntry{Path: p, Type: "file", Mode: 0o644, Size: int64(len(data)), Sums: sum[:], Sizes: []uint32{uint32(len(data))}}
	}
	for _, tc := range []struct {
		name    string
		entries []wire.SnapEntry
	}{
		{"dot dot", []wire.SnapEntry{file("a"), file("../escape")}},
		{"absolute", []wire.SnapEntry{file("a"), file("/tmp/escape")}},
		{"symlink then write", []wire.SnapEntry{{Path: "l", Type: "symlink", Link: "."}, file("l/x")}},
		{"link out", []wire.SnapEntry{file("a"), {Path: "l", Type: "symlink", Link: "../../.."}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &hostileSource{entries: tc.entries, data: data}
			dst := agentTarget{rpc: e.s.rpc, ag: subjects.Agent{Workspace: "w1", ID: "cloud"}}
			_, _, err := e.s.snapshotOnto(ctx, src, snapshotSpec{ws: "w1", agent: "hostile", kind: snapCarry}, dst)
			if we := wire.AsError(err); err == nil || we.Code != wire.CodePermissionDenied || we.Reason != wire.ReasonUnsafeArchiveEntry {
				t.Fatalf("got %v, want permission_denied/unsafe_archive_entry", err)
			}
			if es, _ := os.ReadDir(e.cloudDir); len(es) != 0 {
				t.Fatalf("a refused restore wrote %v", es)
			}
			if snaps, _ := e.cl.ListSnapshots(ctx, "w1"); len(snaps) != 0 {
				t.Fatalf("a refused carry recorded %+v", snaps)
			}
			t.Logf("chunk reads from the source: %d", src.reads.Load())
		})
	}
}
