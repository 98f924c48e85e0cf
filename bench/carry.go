package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// carryMB is the size of the carry suite's tree (-carry-mb): 1024 for the
// figures of issue 17, smaller for a quick run.
var carryMB = 1024

// carryProfile, when set (-carry-cpuprofile), is where the carry suite
// writes CPU profiles of this process during the first carry
// (FILE.first, FILE.first1, ... for each run) and during the incremental
// carries (FILE.inc0, ...) alone.
var carryProfile string

// profiled runs f under a CPU profile written to carryProfile+suffix when
// carryProfile is set (and no other profile runs).
func profiled(suffix string, f func() error) error {
	if carryProfile == "" {
		return f()
	}
	stop, err := startCPUProfile(carryProfile + suffix)
	if err != nil {
		return err
	}
	defer stop()
	return f()
}

// carryFirstRuns is how many times the first carry and rsync -a of the
// whole tree are each timed (-carry-first-runs); the median and the best
// are shown for both.
var carryFirstRuns = 3

// carryRounds is how many change sets (incremental carries, and rsync
// runs) the p50 is taken over (-carry-rounds).
var carryRounds = 5

// benchCarry: a session over two agents of this process, "laptop" and
// "cloud", each with a root of its own. The laptop's root holds a mixed
// tree (small text files, medium and large random ones). First carry:
// swap to the cloud with carry: true (snapshot of the whole root, restore
// onto the empty cloud), next to rsync -a of the same tree to the loopback
// sshd, each timed carryFirstRuns times, interleaved (below); the last
// run's session goes on. Then carryRounds change sets, each 1% of the files drawn up front,
// are applied one by one: each rewritten on the active side and carried
// to the other with a swap. rsync -a gets the same sets in turn, applied
// to its source once its last full copy was brought to the tree the
// carries left (untimed), so both sides move the same files of the same
// sizes; the p50 over the sets is compared, set 0 alongside, and
// the bytes the restores sent are compared with the bytes changed.
func benchCarry(ctx context.Context, e *env) ([]row, error) {
	if err := checkCarryFlags(); err != nil {
		return nil, err
	}
	if err := checkCarryDisk(e.dir, carryMB, carryFirstRuns); err != nil {
		return nil, err
	}
	if e.stateDir != "" {
		// The store holds one run's tree at a time (each run's
		// snapshot is deleted before the next): twice that, for its
		// blocks and the incremental carries'.
		if free, err := freeBytes(e.stateDir); err != nil {
			return nil, err
		} else if need := 2 * int64(carryMB) << 20; need > free {
			return nil, fmt.Errorf("the carry suite's store needs about %.1f GiB free in %s, and %.1f GiB are free: -cp-state-dir same puts it in the bench's directory",
				float64(need)/(1<<30), e.stateDir, float64(free)/(1<<30))
		}
	}
	laptopRoot := filepath.Join(e.dir, "carry-laptop")
	ident, err := e.enroll(ctx, client.EnrollmentTokenRequest{Agent: "carry-laptop"})
	if err != nil {
		return nil, err
	}
	size, files, err := makeMixedTree(laptopRoot, int64(carryMB)<<20)
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("%d files, %d MiB", len(files), size>>20)
	rs, rsErr := newRsyncPeer(ctx, e.dir)

	// The first carry and rsync -a of the whole tree are timed
	// carryFirstRuns times each, interleaved (carry first in even runs,
	// rsync first in odd ones), every run into a directory of its own
	// that nothing deleted: a run's target would otherwise meet the
	// inodes the run before it freed, which this ext4 (no journal) skips
	// one by one for minutes (find_inode_bit → recently_deleted); the
	// copies go when the suite ends. Before each run of either side:
	// sync(1); before each pair, the page cache of the pair before's
	// copies is dropped (evictCopies). Each carry is a first carry: a new
	// laptop agent (an empty chunk cache) on the same tree, a new empty
	// cloud agent, a new session, and a store holding none of the tree's
	// chunks (the run before's snapshot is deleted, and each carry's
	// snapshot must add the whole tree to the store, or the suite fails).
	var stopLaptop, stopCloud func()
	stopAgents := func() {
		for _, stop := range []*func(){&stopLaptop, &stopCloud} {
			if *stop != nil {
				(*stop)()
				*stop = nil
			}
		}
	}
	defer stopAgents()
	var firsts, rsFirsts, firstCPUs latencies
	var order []string
	var id, cloudID, prevSnap string
	var firstSent int64
	// made holds the copies the runs of the pair under way made: they are
	// evicted from the page cache when the next pair begins (evictCopies,
	// with the store's files), and the last pair's stay cached for the 1%
	// rounds, as before.
	var made []string
	carryRun := func(k int) error {
		if prevSnap != "" {
			if err := e.cl.DeleteSnapshot(ctx, e.ws, prevSnap); err != nil {
				return fmt.Errorf("delete the run before's snapshot: %w", err)
			}
			if err := e.cl.DeleteSession(ctx, e.ws, id); err != nil {
				return err
			}
		}
		stopAgents()
		var err error
		if stopLaptop, err = runAgent(ctx, e, ident, "carry-laptop", laptopRoot); err != nil {
			return err
		}
		cloudID = fmt.Sprintf("carry-cloud-%d", k)
		if stopCloud, err = startPoolAgent(ctx, e, cloudID, ""); err != nil {
			return err
		}
		id = fmt.Sprintf("carry-%d-%d", time.Now().UnixNano(), k)
		if _, err := e.cl.CreateSession(ctx, e.ws, client.CreateSessionRequest{ID: id, Active: "laptop",
			Backends: map[string]client.SessionBackend{
				"laptop": {Kind: client.KindAgent, Agent: "carry-laptop"},
				"cloud":  {Kind: client.KindAgent, Agent: cloudID},
			}}); err != nil {
			return fmt.Errorf("create session: %w", err)
		}
		flushDisks(ctx)
		suffix := ".first"
		if k > 0 {
			suffix += fmt.Sprint(k)
		}
		start, cpu0 := time.Now(), processCPU()
		var s *client.Session
		err = profiled(suffix, func() (err error) {
			s, err = e.cl.Swap(ctx, e.ws, id, client.SwapRequest{To: "cloud", Carry: true})
			return err
		})
		if err != nil {
			return fmt.Errorf("first carry %d: %w", k, err)
		}
		firsts = append(firsts, time.Since(start))
		firstCPUs = append(firstCPUs, processCPU()-cpu0)
		order = append(order, "carry "+msT(firsts[len(firsts)-1]))
		firstSent, prevSnap = s.LastCarry.TransferredBytes, s.LastCarry.Snapshot
		made = append(made, filepath.Join(e.dir, cloudID))
		added, err := snapshotNewBytes(ctx, e, prevSnap)
		if err != nil {
			return err
		}
		if added != size || firstSent != size {
			return fmt.Errorf("first carry %d: stored %d and sent %d bytes of a %d-byte tree: not a first carry", k, added, firstSent, size)
		}
		return nil
	}
	rsyncRun := func(k int) error {
		if rsErr != nil {
			return nil
		}
		flushDisks(ctx)
		d, err := rs.full(ctx, laptopRoot, k)
		if err != nil {
			rsErr = err
			return nil
		}
		rsFirsts = append(rsFirsts, d)
		order = append(order, "rsync "+msT(d))
		made = append(made, rs.last)
		return nil
	}
	for k := range carryFirstRuns {
		flushDisks(ctx)
		// The store's files too: with the store on a disk (-cp-state-dir
		// same or DIR) the pair before's carry left its GiB there cached,
		// which rsync, with no store, would not have beside it. On tmpfs
		// there is nothing to drop.
		if err := evictCopies(append(made, e.storeDir)); err != nil {
			return nil, fmt.Errorf("evict the copies of the runs before: %w", err)
		}
		made = nil
		steps := []func(int) error{carryRun, rsyncRun}
		if k%2 == 1 {
			steps[0], steps[1] = rsyncRun, carryRun
		}
		for _, step := range steps {
			if err := step(k); err != nil {
				return nil, err
			}
		}
	}
	defer e.cl.DeleteSession(context.WithoutCancel(ctx), e.ws, id)
	dirs := map[string]string{"carry-laptop": laptopRoot, cloudID: filepath.Join(e.dir, cloudID)}

	// carryRounds change sets of 1% of the files, drawn up front: the
	// carries and rsync get the same sets (the same files, so the same
	// bytes changed), each set on its own side's copy.
	root := dirs["carry-laptop"]
	sets, err := drawChanges(files, max(carryRounds, 1), len(files)/100)
	if err != nil {
		return nil, err
	}
	backends := map[string]string{"laptop": "carry-laptop", "cloud": cloudID}
	var lat latencies
	var changed, sent int64
	active := "cloud"
	var incCPU time.Duration
	for i, set := range sets {
		if err := set.apply(root, dirs[backends[active]], files, carrySeed+uint64(i)); err != nil {
			return nil, err
		}
		to := map[string]string{"laptop": "cloud", "cloud": "laptop"}[active]
		flushDisks(ctx)
		var s *client.Session
		var took, cpu time.Duration
		err = profiled(fmt.Sprintf(".inc%d", i), func() (err error) {
			start, cpu0 := time.Now(), processCPU()
			s, err = e.cl.Swap(ctx, e.ws, id, client.SwapRequest{To: to, Carry: true})
			took, cpu = time.Since(start), processCPU()-cpu0
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("carry %d: %w", i+2, err)
		}
		lat = append(lat, took)
		incCPU += cpu
		changed += set.bytes
		sent += s.LastCarry.TransferredBytes
		active = to
	}
	var rsInc latencies
	if rsErr == nil {
		rsInc, rsErr = rs.changes(ctx, root, files, sets)
	}
	setsMB := make([]string, len(sets))
	for i, set := range sets {
		setsMB[i] = fmt.Sprintf("%.1f", float64(set.bytes)/1e6)
	}
	n := len(sets)
	first, rsFirst := firsts.pct(50), rsFirsts.pct(50)
	firstBest, rsBest := firsts.pct(0), rsFirsts.pct(0)
	nf := len(firsts)
	rows := []row{
		{Name: fmt.Sprintf("carry, first (%s): swap with carry to an empty agent vs rsync -a to loopback sshd, median of %d runs each, interleaved (best of %d in brackets); the store in %s", label, nf, nf, storePlace()),
			Outpost: fmt.Sprintf("%s (best %s)", msT(first), msT(firstBest)), Goal: "≤ 1.5× rsync"},
		{Name: "carry, first: the runs in the order they ran (each after sync(1), each into a new directory, the pair before's copies dropped from the page cache)", Outpost: strings.Join(order, ", ")},
		{Name: fmt.Sprintf("carry, 1%% of files changed: swap with carry vs rsync -a of the same change, p50 over the same %d change sets", n),
			Outpost: msT(lat.pct(50)), Goal: "≤ 1.0× rsync"},
		{Name: fmt.Sprintf("carry, 1%% changed: change set 0 alone (%s MB changed, both sides)", setsMB[0]), Outpost: msT(lat[0])},
		{Name: fmt.Sprintf("carry, 1%% changed: MB changed by each of the %d sets (%d files each; the same files for carry and rsync)", n, len(sets[0].idx)),
			Outpost: strings.Join(setsMB, " / ")},
		{Name: fmt.Sprintf("carry, 1%% changed: bytes sent vs bytes changed, all %d carries", n), Outpost: fmt.Sprintf("%d", sent), Baseline: fmt.Sprintf("%d changed", changed),
			Ratio: fmt.Sprintf("%.2fx", float64(sent)/float64(max(changed, 1))), Goal: "≤ 1.2×", Met: yesNo(float64(sent) <= 1.2*float64(changed))},
		// CPU time depends less on the machine's load than the times
		// above: what the carry costs, whatever else runs.
		{Name: fmt.Sprintf("carry, 1%% changed: CPU time of the bench process (control plane and both agents) per carry, mean of %d", n),
			Outpost: msT(incCPU / time.Duration(n))},
		{Name: "carry, first: bytes sent vs tree size (each run)", Outpost: fmt.Sprintf("%d", firstSent), Baseline: fmt.Sprintf("%d", size)},
		{Name: fmt.Sprintf("carry, first: CPU time of the bench process (control plane and both agents), median of %d (each run)", nf), Outpost: msT(firstCPUs.pct(50)),
			Baseline: msList(firstCPUs), Ratio: fmt.Sprintf("%.2f cores", firstCPUs.pct(50).Seconds()/first.Seconds())},
		{Name: "carry suite: load average after (2 shared cores)", Outpost: loadAvg()},
	}
	if rsErr != nil {
		for _, i := range []int{0, 2, 3} {
			rows[i].Baseline = "skipped: " + rsErr.Error()
		}
		return rows, nil
	}
	rsP50 := rsInc.pct(50)
	rows[0].Baseline = fmt.Sprintf("%s (best %s) (rsync)", msT(rsFirst), msT(rsBest))
	rows[0].Ratio = fmt.Sprintf("%s (best %s)", ratio(first, rsFirst), ratio(firstBest, rsBest))
	rows[0].Met = yesNo(first.Seconds() <= 1.5*rsFirst.Seconds())
	rows[2].Baseline, rows[2].Ratio, rows[2].Met = msT(rsP50)+" (rsync p50)", ratio(lat.pct(50), rsP50), yesNo(lat.pct(50) <= rsP50)
	rows[3].Baseline, rows[3].Ratio = msT(rsInc[0])+" (rsync)", ratio(lat[0], rsInc[0])
	return rows, nil
}

// checkCarryFlags reports what is wrong with the carry suite's flags: the
// tree and the change sets must be at least 1, and the first runs a
// positive odd number, so that the row's median is one run's time on
// each side (latencies.pct(50) of an even number is the lower of the two
// middle ones: for 2, the best).
func checkCarryFlags() error {
	switch {
	case carryMB < 1:
		return fmt.Errorf("-carry-mb must be at least 1 (got %d)", carryMB)
	case carryFirstRuns < 1 || carryFirstRuns%2 == 0:
		return fmt.Errorf("-carry-first-runs must be an odd number, 1 or more (got %d): the row gives the median of the runs", carryFirstRuns)
	case carryRounds < 1:
		return fmt.Errorf("-carry-rounds must be at least 1 (got %d)", carryRounds)
	}
	return nil
}

// storePlace says where the control plane's store is (-cp-state-dir).
func storePlace() string {
	if !storeApart() {
		return "the bench's directory (the agents' file system)"
	}
	if isTmpfs(cpStateDir) {
		return cpStateDir + " (tmpfs: in memory, no disk)"
	}
	return cpStateDir
}

// isTmpfs says whether dir is on a tmpfs (Linux), whose writes go to
// memory only.
func isTmpfs(dir string) bool {
	var st syscall.Statfs_t
	return runtime.GOOS == "linux" && syscall.Statfs(dir, &st) == nil && uint64(st.Type) == 0x01021994
}

// carryDiskNeed is about what the carry suite keeps on disk until it
// ends with a tree of mb MiB and runs first runs: the tree, the carry's
// and rsync's copy of each run (none is deleted before the suite ends),
// and the store's copy (the control plane's JetStream; counted here even
// when -cp-state-dir puts it elsewhere, where benchCarry checks it
// again). A 64 MiB tree with 3 runs peaked at 528 MiB.
func carryDiskNeed(mb, runs int) int64 { return int64(2*runs+2) * int64(mb) << 20 }

// checkCarryDisk refuses to start the suite when the file system of dir
// has not carryDiskNeed free: a shared machine's disk is not filled part
// way through (other engineers' work would fail with it).
func checkCarryDisk(dir string, mb, runs int) error {
	free, err := freeBytes(dir)
	if err != nil {
		return err
	}
	if need := carryDiskNeed(mb, runs); need > free {
		return fmt.Errorf("the carry suite needs about %.1f GiB free in %s (the tree, two copies a first run, the store's), and %.1f GiB are free: lower -carry-mb or -carry-first-runs",
			float64(need)/(1<<30), dir, float64(free)/(1<<30))
	}
	return nil
}

// freeBytes is what an unprivileged user may still write on dir's file
// system.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize)), nil
}

// msList renders each of l in whole milliseconds, in order.
func msList(l latencies) string {
	out := make([]string, len(l))
	for i, d := range l {
		out[i] = fmt.Sprintf("%.0f", d.Seconds()*1e3)
	}
	return strings.Join(out, " / ") + " ms"
}

// snapshotNewBytes is the bytes snapshot id added to the store.
func snapshotNewBytes(ctx context.Context, e *env, id string) (int64, error) {
	snaps, err := e.cl.ListSnapshots(ctx, e.ws)
	if err != nil {
		return 0, err
	}
	for _, sn := range snaps {
		if sn.ID == id {
			return sn.NewBytes, nil
		}
	}
	return 0, fmt.Errorf("snapshot %s not listed", id)
}

// Seeds of the content a change set writes: the carries' and rsync's
// differ (both are new random bytes of the same sizes), so that rsync's
// copy, which starts from the tree the carries left, never gets a file
// back as it was.
const (
	carrySeed = 1000
	rsyncSeed = 2000
)

// changeSet is one round's change: distinct files (indexes into the
// tree's files) rewritten whole at their sizes, and the bytes that is.
type changeSet struct {
	idx   []int
	bytes int64
}

// drawChanges draws rounds change sets of n distinct files each, from a
// generator of their own (not the tree's), with the files' sizes (a
// rewrite keeps them).
func drawChanges(files []string, rounds, n int) ([]changeSet, error) {
	r := rand.New(rand.NewPCG(17, 17))
	sets := make([]changeSet, rounds)
	for i := range sets {
		for _, j := range r.Perm(len(files))[:max(n, 1)] {
			fi, err := os.Stat(files[j])
			if err != nil {
				return nil, err
			}
			sets[i].idx = append(sets[i].idx, j)
			sets[i].bytes += fi.Size()
		}
	}
	return sets, nil
}

// makeMixedTree writes about total bytes under dir: a tenth in small text
// files (2–18 KB), three tenths in medium random files (64 KiB–1 MiB), the
// rest in large random ones (4–28 MiB), plus a symlink per directory. It
// returns the bytes written and the files' paths.
func makeMixedTree(dir string, total int64) (int64, []string, error) {
	r := rand.New(rand.NewPCG(5, 5))
	var files []string
	var size int64
	words := []string{"func", "return", "err", "nil", "package", "import", "value", "context", "the"}
	write := func(sub string, b []byte) error {
		d := filepath.Join(dir, fmt.Sprintf("d%02d", len(files)%50), sub)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		p := filepath.Join(d, fmt.Sprintf("f%05d", len(files)))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
		files = append(files, p)
		size += int64(len(b))
		return nil
	}
	for size < total/10 {
		n := 2000 + r.IntN(16000)
		b := make([]byte, 0, n+16)
		for len(b) < n {
			b = append(b, words[r.IntN(len(words))]...)
			b = append(b, " \n"[r.IntN(2)])
		}
		if err := write("src", b); err != nil {
			return 0, nil, err
		}
	}
	for size < total*4/10 {
		if err := write("assets", randomBytes(r, 64<<10+r.IntN(960<<10))); err != nil {
			return 0, nil, err
		}
	}
	for size < total {
		if err := write("blobs", randomBytes(r, int(min(4<<20+r.Int64N(24<<20), total-size+1)))); err != nil {
			return 0, nil, err
		}
	}
	for i := range 50 {
		os.Symlink("src", filepath.Join(dir, fmt.Sprintf("d%02d", i), "link"))
	}
	return size, files, nil
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// apply rewrites the set's files (paths under root, the carry-laptop
// root, mapped onto dir) with new random content of the same size from
// seed.
func (c changeSet) apply(root, dir string, files []string, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, seed))
	for _, j := range c.idx {
		rel, err := filepath.Rel(root, files[j])
		if err != nil {
			return err
		}
		p := filepath.Join(dir, rel)
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, randomBytes(r, int(fi.Size())), 0o644); err != nil {
			return err
		}
		// rsync -a's quick check skips a file of the same size whose
		// mtime is in the same whole second: a set that rewrites a file
		// the one before did, within a second, would go unseen by the
		// baseline. The rewrite's mtime is in a later second than the
		// file's before (both sides' sets: a carry sees it either way).
		if old := fi.ModTime().Truncate(time.Second); !time.Now().Truncate(time.Second).After(old) {
			t := old.Add(time.Second)
			if err := os.Chtimes(p, t, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// rsyncPeer is the rsync -a baseline's target: directories on the
// loopback sshd (other benches, of other worktrees, use it at once), one
// per full copy, made next to the carry's targets (siblings under dir,
// owned by the sshd's user): ext4 places a new directory's inodes near
// its parent's, and the cost of allocating them depends on what was
// deleted there lately (every bench's trees come and go under /tmp), so
// both sides' copies go where the file system is in the same state.
// changes goes on the last copy.
type rsyncPeer struct {
	cfg, dir string
	uid, gid int
	last     string
}

// newRsyncPeer starts (or finds) the loopback sshd and asks who its user
// is; dir is where the copies go (the bench's directory, removed with it).
func newRsyncPeer(ctx context.Context, dir string) (*rsyncPeer, error) {
	if _, err := exec.LookPath("rsync"); err != nil {
		return nil, fmt.Errorf("no rsync")
	}
	cfg, err := sshPeer(ctx)
	if err != nil {
		return nil, err
	}
	b, err := exec.CommandContext(ctx, "ssh", "-F", cfg, "peer", "id -u; id -g").Output()
	if err != nil {
		return nil, fmt.Errorf("ssh peer id: %w", err)
	}
	var uid, gid int
	if _, err := fmt.Sscan(string(b), &uid, &gid); err != nil {
		return nil, fmt.Errorf("ssh peer id: %q: %w", b, err)
	}
	// The sshd's user passes through dir (made 0700) to its copies: it
	// may not list dir (the control plane's state in it is 0700 too).
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	return &rsyncPeer{cfg: cfg, dir: dir, uid: uid, gid: gid}, nil
}

func (p *rsyncPeer) run(ctx context.Context, src, dir string) error {
	args := []string{"-a", "-e", "ssh -F " + p.cfg, src + "/", "peer:" + dir + "/"}
	b, err := exec.CommandContext(ctx, "rsync", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("rsync %v: %v: %s", args, err, b)
	}
	return nil
}

// full times rsync -a of src into a new, empty directory k (nothing of
// it is deleted before the suite ends).
func (p *rsyncPeer) full(ctx context.Context, src string, k int) (time.Duration, error) {
	p.last = filepath.Join(p.dir, fmt.Sprintf("rsync-copy-%d", k))
	if err := os.Mkdir(p.last, 0o755); err != nil {
		return 0, err
	}
	if err := os.Chown(p.last, p.uid, p.gid); err != nil {
		return 0, err
	}
	return timedD(func() error { return p.run(ctx, src, p.last) })
}

// changes applies each of the carries' change sets to src in turn and
// times rsync -a of each change onto the last full copy. The full copies
// were made before the incremental carries, which changed src (their
// own sets, carried back to the laptop): an untimed rsync -a first brings
// the copy to the tree the carries left, so that each timed run moves its
// set's files and no others, as each carry does.
func (p *rsyncPeer) changes(ctx context.Context, src string, files []string, sets []changeSet) (latencies, error) {
	if err := p.run(ctx, src, p.last); err != nil {
		return nil, err
	}
	var inc latencies
	for i, set := range sets {
		if err := set.apply(src, src, files, rsyncSeed+uint64(i)); err != nil {
			return nil, err
		}
		flushDisks(ctx)
		d, err := timedD(func() error { return p.run(ctx, src, p.last) })
		if err != nil {
			return nil, err
		}
		inc = append(inc, d)
	}
	return inc, nil
}

// loadAvg is the 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// flushDisks writes every dirty page out (sync(1)) before a timed copy, so
// that neither side pays for writes made before it (the tree's making, the
// other side's copy): a carry ends with syncfs, which flushes the whole
// file system, and rsync's time swung between 2.8 and 10.2 s with what
// was left dirty before it. Where there is no sync(1) it does nothing.
func flushDisks(ctx context.Context) {
	_ = exec.CommandContext(ctx, "sync").Run()
}
