package controlplane

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// fenceCarryEnv is a carry env whose cloud already has dup/keep.txt as the
// laptop has it and an old dup/edit.txt, which the laptop has with
// keep.txt's content: the restore writes edit.txt from the cloud's own
// chunks, in its commit, after every chunk was delivered.
func fenceCarryEnv(t *testing.T) *carryEnv { return fenceCarryEnvBig(t, 0) }

// fenceCarryEnvBig is fenceCarryEnv whose laptop has big random files of
// 1 MiB too (writeBigFiles): with 8 or more, the carry's batches go on
// bulk connections.
func fenceCarryEnvBig(t *testing.T, big int) *carryEnv {
	e := newCarryEnvConfig(t, 0, func(_ *Config, laptopDir string) {
		writeFile(t, filepath.Join(laptopDir, "dup/keep.txt"), "the same content in two files\n", 0o644)
		writeFile(t, filepath.Join(laptopDir, "dup/edit.txt"), "the same content in two files\n", 0o644)
		writeBigFiles(t, laptopDir, big, 5000)
	})
	writeFile(t, filepath.Join(e.cloudDir, "dup/keep.txt"), "the same content in two files\n", 0o644)
	writeFile(t, filepath.Join(e.cloudDir, "dup/edit.txt"), "old on the cloud\n", 0o644)
	return e
}

// writeAtNewEpoch writes, through the session (so at its current epoch),
// a new content into dup/edit.txt and a new file fresh.txt.
func writeAtNewEpoch(t *testing.T, e *carryEnv) {
	ctx := context.Background()
	sess := e.cl.Session("w1", "s1")
	for p, c := range map[string]string{"dup/edit.txt": "written at the new epoch\n", "fresh.txt": "created at the new epoch\n"} {
		if _, err := sess.Put(ctx, p, strings.NewReader(c), int64(len(c)), client.PutOptions{}); err != nil {
			t.Errorf("write %s through the session: %v", p, err)
		}
	}
}

// newEpochWritesKept fails t unless what writeAtNewEpoch wrote is on the
// cloud, and read so through the session, and no temporary file is left.
func newEpochWritesKept(t *testing.T, e *carryEnv) {
	t.Helper()
	ctx := context.Background()
	for p, want := range map[string]string{"dup/edit.txt": "written at the new epoch\n", "fresh.txt": "created at the new epoch\n"} {
		got, err := os.ReadFile(filepath.Join(e.cloudDir, p))
		if err != nil || string(got) != want {
			t.Errorf("%s on the cloud after the losing carry: %q, %v; want %q (written through the session at the new epoch)", p, got, err, want)
		}
		f, err := e.cl.Session("w1", "s1").Get(ctx, p)
		if err != nil {
			t.Errorf("read %s through the session: %v", p, err)
			continue
		}
		b, _ := io.ReadAll(f.Body)
		f.Body.Close()
		if string(b) != want {
			t.Errorf("%s read through the session: %q, want %q", p, b, want)
		}
	}
	waitFor(t, waitLong, "no temporary file on the cloud", func() bool {
		d, err := digestTree(e.cloudDir)
		if err != nil {
			return false
		}
		for p := range d {
			if strings.Contains(p, files.TempPrefix) {
				return false
			}
		}
		return true
	})
}

// loserSnapshotWhole fails t unless every snapshot but winner is the
// losing carry's, whole: the laptop's tree at epoch 1, recorded when the
// carry's pull ended before its restore's refusal stopped it (else there
// is none).
func loserSnapshotWhole(t *testing.T, e *carryEnv, winner string) {
	t.Helper()
	snaps, err := e.cl.ListSnapshots(context.Background(), "w1")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, d := range treeDigest(t, e.laptopDir) {
		if strings.HasPrefix(d, "file") {
			files++
		}
	}
	n := 0
	for _, sn := range snaps {
		if sn.ID == winner {
			continue
		}
		n++
		if sn.Kind != "carry" || sn.Backend != "laptop" || sn.Session != "s1" || sn.Files != files {
			t.Errorf("the losing carry's snapshot: %+v, want the laptop's %d files", sn, files)
		}
	}
	if n > 1 || (winner != "" && len(snaps) == n) {
		t.Errorf("snapshots %+v: want the winner's %q and at most one of the loser", snaps, winner)
	}
	t.Logf("the losing carry's snapshot listed: %v", n == 1)
}

// A plain swap moves the pointer to the cloud while a carry to the cloud
// pulls its chunks, and a client then writes and creates files on the
// cloud through the session, at the new epoch. The carry loses
// (epoch_mismatch), and its restore must not overwrite those writes nor
// delete the new file: the session is where the plain swap put it,
// without lastCarry, and what was written at the new epoch stays.
func TestSwapCarryLoserKeepsNewEpochWrites(t *testing.T) {
	t.Run("nats", func(t *testing.T) { swapCarryLoserKeepsNewEpochWrites(t, 0) })
	// The pull's and the forwarder's batches on bulk connections: the
	// chunks the restore reads from one are written under its request's
	// hold of the fence too.
	t.Run("bulk", func(t *testing.T) { swapCarryLoserKeepsNewEpochWrites(t, 40) })
}

func swapCarryLoserKeepsNewEpochWrites(t *testing.T, big int) {
	e := fenceCarryEnvBig(t, big)
	var tickets atomic.Int64
	e.s.bulk.issued = func(string) { tickets.Add(1) }
	defer func() {
		if n := tickets.Load(); (big > 0) != (n > 0) {
			t.Errorf("%d bulk tickets issued", n)
		}
	}()
	ctx := context.Background()
	var fired atomic.Bool
	e.s.afterChunkBatch = func() {
		if fired.Swap(true) {
			return
		}
		if _, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud"}); err != nil {
			t.Error(err)
		}
		writeAtNewEpoch(t, e)
	}
	_, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
	if !fired.Load() {
		t.Fatal("the carry never pulled a chunk batch")
	}
	lostCarry(t, e, err, false)
}

// lostCarry checks what a carry that lost (err) leaves: 409
// epoch_mismatch, the session on the cloud at epoch 2 with the winner's
// lastCarry (none when the winner was a plain swap), the loser's snapshot
// whole, no carry goroutine, and the writes made at the new epoch kept.
func lostCarry(t *testing.T, e *carryEnv, err error, winnerCarried bool) {
	t.Helper()
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeConflict || we.Reason != wire.ReasonEpochMismatch {
		t.Fatalf("the losing carry: %v, want conflict/epoch_mismatch", err)
	}
	t.Logf("the losing carry: %v", err)
	sess, err := e.cl.GetSession(context.Background(), "w1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Active != "cloud" || sess.Epoch != 2 || (sess.LastCarry != nil) != winnerCarried {
		t.Fatalf("after the lost carry: %+v", sess)
	}
	winner := ""
	if winnerCarried {
		winner = sess.LastCarry.Snapshot
	}
	loserSnapshotWhole(t, e, winner)
	noCarryGoroutines(t)
	newEpochWritesKept(t, e)
}

// Two carries to the cloud: the second runs whole while the first pulls
// its chunks, wins, and a client writes at its epoch; the first, the
// loser, must not overwrite those writes.
func TestSwapCarryLoserOfTwoKeepsNewEpochWrites(t *testing.T) {
	e := fenceCarryEnv(t)
	ctx := context.Background()
	var fired atomic.Bool
	e.s.afterChunkBatch = func() {
		if fired.Swap(true) {
			return
		}
		sess, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
		if err != nil {
			t.Error(err)
			return
		}
		if sess.LastCarry == nil || sess.Epoch != 2 {
			t.Errorf("the winning carry: %+v", sess)
		}
		writeAtNewEpoch(t, e)
	}
	_, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
	lostCarry(t, e, err, true)
}

// A plain swap moves the pointer to the cloud while the carry's restore
// commits there (it is writing, from the cloud's own chunks, thousands of
// files the laptop has twice), and a client then writes through the
// session: the fence ping of the swap stops the commit part way
// (conflict/superseded, answered as epoch_mismatch), every file on the
// cloud is old or new with no temporary file, what was written at the new
// epoch stays, and nothing on the cloud changes after those writes.
func TestSwapCarryCommitStoppedByNewEpoch(t *testing.T) {
	const n = 4000
	content := func(i int) string { return fmt.Sprintf("file %d of the cloud and the laptop\n", i) }
	e := newCarryEnvConfig(t, 0, func(_ *Config, laptopDir string) {
		for i := range n {
			writeFile(t, filepath.Join(laptopDir, fmt.Sprintf("a/%04d", i)), content(i), 0o644)
			writeFile(t, filepath.Join(laptopDir, fmt.Sprintf("b/%04d", i)), content(i), 0o644)
		}
		writeFile(t, filepath.Join(laptopDir, "dup/keep.txt"), "the same content in two files\n", 0o644)
		writeFile(t, filepath.Join(laptopDir, "dup/edit.txt"), "the same content in two files\n", 0o644)
	})
	for i := range n {
		writeFile(t, filepath.Join(e.cloudDir, fmt.Sprintf("a/%04d", i)), content(i), 0o644)
	}
	writeFile(t, filepath.Join(e.cloudDir, "dup/keep.txt"), "the same content in two files\n", 0o644)
	writeFile(t, filepath.Join(e.cloudDir, "dup/edit.txt"), "old on the cloud\n", 0o644)
	older, newer := treeDigest(t, e.cloudDir), treeDigest(t, e.laptopDir)
	ctx := context.Background()

	// The commit writes b/ (the cloud has none of it) from a/.
	var after map[string]string
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		for {
			if _, err := os.Stat(filepath.Join(e.cloudDir, "b/0000")); err == nil {
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
		if _, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud"}); err != nil {
			t.Error(err)
		}
		writeAtNewEpoch(t, e)
		var err error
		for after == nil || err != nil {
			after, err = digestTree(e.cloudDir)
		}
	}()
	_, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
	<-moved
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeConflict || we.Reason != wire.ReasonEpochMismatch {
		t.Fatalf("swap: %v, want conflict/epoch_mismatch", err)
	}
	t.Logf("the losing carry: %v", err)
	if !strings.Contains(err.Error(), wire.ReasonSuperseded) {
		t.Errorf("the carry's commit was not stopped part way (%v)", err)
	}
	newEpochWritesKept(t, e)
	now := treeDigest(t, e.cloudDir)
	for p, d := range now {
		if after[p] != d {
			t.Errorf("%s changed on the cloud after the writes at the new epoch: %q, then %q", p, after[p], d)
		}
	}
	if len(now) != len(after) {
		t.Errorf("the cloud had %d entries after the writes at the new epoch, %d now", len(after), len(now))
	}
	delete(now, "fresh.txt")
	delete(now, "dup/edit.txt")
	renamed := 0
	for p, d := range now {
		switch {
		case d == older[p]:
		case d == newer[p]:
			renamed++
		default:
			t.Errorf("%s on the cloud is %q: neither old (%q) nor new (%q)", p, d, older[p], newer[p])
		}
	}
	t.Logf("%d of %d entries new on the cloud", renamed, len(newer))
	sess, err := e.cl.GetSession(ctx, "w1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Active != "cloud" || sess.Epoch != 2 || sess.LastCarry != nil {
		t.Fatalf("after the lost carry: %+v", sess)
	}
	// Its snapshot was recorded while its restore committed: it stays,
	// a whole snapshot of the laptop at epoch 1.
	snaps, _ := e.cl.ListSnapshots(ctx, "w1")
	if len(snaps) != 1 || snaps[0].Kind != "carry" || snaps[0].Backend != "laptop" || snaps[0].Session != "s1" {
		t.Fatalf("after the carry stopped in its commit: %+v", snaps)
	}
	noCarryGoroutines(t)
	// The stopped restore left nothing in the way of the next one: back
	// to the laptop, a carry to the cloud makes it the laptop's tree.
	if _, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "laptop"}); err != nil {
		t.Fatal(err)
	}
	if sess, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true}); err != nil || sess.LastCarry == nil {
		t.Fatalf("a carry after the stopped one: %+v, %v", sess, err)
	}
	sameTree(t, e.laptopDir, e.cloudDir)
	newEpochWritesGone := treeDigest(t, e.cloudDir)
	if _, ok := newEpochWritesGone["fresh.txt"]; ok {
		t.Errorf("fresh.txt, which the laptop lacks, is still on the cloud after a carry with delete")
	}
	noCarryGoroutines(t)
}

// A carry that read the session before a plain swap moved it to the cloud
// (on another control-plane replica, say) restores onto the cloud only
// after a client wrote there at the new epoch and the cloud restarted,
// forgetting its fence (it is in memory): the carry reads the session
// once its restore began, finds it moved, and aborts before writing.
func TestCarryAfterTargetRestartKeepsNewEpochWrites(t *testing.T) {
	e := fenceCarryEnv(t)
	ctx := context.Background()
	st, err := e.s.sessions.Session("w1", "s1").State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud"}); err != nil {
		t.Fatal(err)
	}
	writeAtNewEpoch(t, e)
	e.stopCloud()
	e.stopCloud = stoppableAgent(t, e.s, "w1", "cloud", e.cloudDir)
	cloud, _ := st.Agent("cloud")
	_, err = e.s.carry(ctx, st, cloud)
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeConflict || we.Reason != wire.ReasonEpochMismatch {
		t.Fatalf("a carry from epoch %d onto the restarted cloud: %v, want conflict/epoch_mismatch", st.Epoch, err)
	}
	t.Logf("the stale carry: %v", err)
	noCarryGoroutines(t)
	newEpochWritesKept(t, e)
}

// The same across two control-plane replicas, which share no lock: a
// carry on replica a loses to a plain swap made on replica b while it
// pulls its chunks, and a client writes through replica b at the new
// epoch: those writes stay.
func TestSwapCarryLoserAcrossReplicas(t *testing.T) {
	rs := startReplicas(t, 2)
	a, b := rs[0], rs[1]
	ctx := context.Background()
	if _, err := adminClient(a).CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	eb := &carryEnv{s: b, cl: adminClient(b), laptopDir: t.TempDir(), cloudDir: t.TempDir()}
	writeMixedTree(t, eb.laptopDir)
	for _, dir := range []string{eb.laptopDir, eb.cloudDir} {
		writeFile(t, filepath.Join(dir, "dup/keep.txt"), "the same content in two files\n", 0o644)
	}
	writeFile(t, filepath.Join(eb.laptopDir, "dup/edit.txt"), "the same content in two files\n", 0o644)
	writeFile(t, filepath.Join(eb.cloudDir, "dup/edit.txt"), "old on the cloud\n", 0o644)
	realAgent(t, a, "w1", "laptop", eb.laptopDir)
	realAgent(t, a, "w1", "cloud", eb.cloudDir)
	waitFor(t, waitLong, "replica b sees the agents", func() bool {
		ags, err := eb.cl.ListAgents(ctx, "w1")
		return err == nil && len(ags) == 2 && ags[0].Status == "online" && ags[1].Status == "online"
	})
	_, err := adminClient(a).CreateSession(ctx, "w1", client.CreateSessionRequest{ID: "s1", Active: "laptop",
		Backends: map[string]client.SessionBackend{"laptop": {Kind: "agent", Agent: "laptop"}, "cloud": {Kind: "agent", Agent: "cloud"}}})
	if err != nil {
		t.Fatal(err)
	}
	var fired atomic.Bool
	a.afterChunkBatch = func() {
		if fired.Swap(true) {
			return
		}
		if _, err := eb.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud"}); err != nil {
			t.Error(err)
		}
		writeAtNewEpoch(t, eb)
	}
	_, err = adminClient(a).Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud", Carry: true})
	if !fired.Load() {
		t.Fatal("the carry never pulled a chunk batch")
	}
	lostCarry(t, eb, err, false)
}

// A swap tells the new backend the new epoch as well as the old one: a
// request at the old epoch (a carry that lost, still restoring there) is
// refused by both at once, before any client request reached them.
func TestSwapFencesOldAndNewBackend(t *testing.T) {
	e := newCarryEnv(t, 0)
	ctx := context.Background()
	st, err := e.s.sessions.Session("w1", "s1").State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cl.Swap(ctx, "w1", "s1", client.SwapRequest{To: "cloud"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"laptop", "cloud"} {
		ag, _ := st.Agent(id)
		err := e.s.rpc.Call(ctx, ag, wire.OpPing, nil, nil, rpc.CallOptions{Session: st.UID, Epoch: st.Epoch})
		if err == nil || wire.AsError(err).Reason != wire.ReasonFenced {
			t.Errorf("%s after the swap, a request at epoch %d: %v, want fenced", id, st.Epoch, err)
		}
	}
}
