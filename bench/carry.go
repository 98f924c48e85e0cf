package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// carryMB is the size of the carry suite's tree (-carry-mb): 1024 for the
// figures of issue 17, smaller for a quick run.
var carryMB = 1024

// carryProfile, when set (-carry-cpuprofile), is where the carry suite
// writes CPU profiles of this process during the first carry
// (FILE.first) and during the incremental carries (FILE.inc) alone.
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

// carryRounds is how many change sets (incremental carries, and rsync
// runs) the p50 is taken over (-carry-rounds).
var carryRounds = 5

// benchCarry: a session over two agents of this process, "laptop" and
// "cloud", each with a root of its own. The laptop's root holds a mixed
// tree (small text files, medium and large random ones). First carry:
// swap to the cloud with carry: true (snapshot of the whole root, restore
// onto the empty cloud), next to rsync -a of the same tree to the loopback
// sshd. Then carryRounds change sets, each 1% of the files drawn up front,
// are applied one by one: each rewritten on the active side and carried
// to the other with a swap. rsync -a gets the same sets in turn, applied
// to its source after its full copy, so both sides move the same files of
// the same sizes; the p50 over the sets is compared, set 0 alongside, and
// the bytes the restores sent are compared with the bytes changed.
func benchCarry(ctx context.Context, e *env) ([]row, error) {
	dirs := map[string]string{}
	for _, id := range []string{"carry-laptop", "carry-cloud"} {
		stop, err := startPoolAgent(ctx, e, id, "")
		if err != nil {
			return nil, err
		}
		defer stop()
		dirs[id] = filepath.Join(e.dir, id)
	}
	size, files, err := makeMixedTree(dirs["carry-laptop"], int64(carryMB)<<20)
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("carry-%d", time.Now().UnixNano())
	if _, err := e.cl.CreateSession(ctx, e.ws, client.CreateSessionRequest{ID: id, Active: "laptop",
		Backends: map[string]client.SessionBackend{
			"laptop": {Kind: client.KindAgent, Agent: "carry-laptop"},
			"cloud":  {Kind: client.KindAgent, Agent: "carry-cloud"},
		}}); err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	defer e.cl.DeleteSession(context.WithoutCancel(ctx), e.ws, id)
	label := fmt.Sprintf("%d files, %d MiB", len(files), size>>20)

	flushDisks(ctx)
	start, cpu0 := time.Now(), processCPU()
	var s *client.Session
	err = profiled(".first", func() (err error) {
		s, err = e.cl.Swap(ctx, e.ws, id, client.SwapRequest{To: "cloud", Carry: true})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("first carry: %w", err)
	}
	first, firstCPU := time.Since(start), processCPU()-cpu0
	firstSent := s.LastCarry.TransferredBytes

	// carryRounds change sets of 1% of the files, drawn up front: the
	// carries and rsync get the same sets (the same files, so the same
	// bytes changed), each set on its own side's copy.
	root := dirs["carry-laptop"]
	sets, err := drawChanges(files, max(carryRounds, 1), len(files)/100)
	if err != nil {
		return nil, err
	}
	backends := map[string]string{"laptop": "carry-laptop", "cloud": "carry-cloud"}
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
	rsFull, rsInc, rsErr := rsyncCarryBaseline(ctx, root, files, sets)
	setsMB := make([]string, len(sets))
	for i, set := range sets {
		setsMB[i] = fmt.Sprintf("%.1f", float64(set.bytes)/1e6)
	}
	n := len(sets)
	rows := []row{
		{Name: "carry, first (" + label + "): swap with carry to an empty agent vs rsync -a to loopback sshd", Outpost: msT(first),
			Goal: "≤ 1.5× rsync"},
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
		{Name: "carry, first: bytes sent vs tree size", Outpost: fmt.Sprintf("%d", firstSent), Baseline: fmt.Sprintf("%d", size)},
		{Name: "carry, first: CPU time of the bench process (control plane and both agents) during it", Outpost: msT(firstCPU),
			Ratio: fmt.Sprintf("%.2f cores", firstCPU.Seconds()/first.Seconds())},
		{Name: "carry suite: load average after (2 shared cores)", Outpost: loadAvg()},
	}
	if rsErr != nil {
		for _, i := range []int{0, 1, 2} {
			rows[i].Baseline = "skipped: " + rsErr.Error()
		}
		return rows, nil
	}
	rsP50 := rsInc.pct(50)
	rows[0].Baseline, rows[0].Ratio, rows[0].Met = msT(rsFull)+" (rsync)", ratio(first, rsFull), yesNo(first.Seconds() <= 1.5*rsFull.Seconds())
	rows[1].Baseline, rows[1].Ratio, rows[1].Met = msT(rsP50)+" (rsync p50)", ratio(lat.pct(50), rsP50), yesNo(lat.pct(50) <= rsP50)
	rows[2].Baseline, rows[2].Ratio = msT(rsInc[0])+" (rsync)", ratio(lat[0], rsInc[0])
	return rows, nil
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

// rsyncCarryBaseline copies src to the loopback sshd with rsync -a (best
// of two, each to an empty target), then applies each of the carries'
// change sets to src in turn and times rsync -a of each change.
func rsyncCarryBaseline(ctx context.Context, src string, files []string, sets []changeSet) (full time.Duration, inc latencies, err error) {
	if _, err := exec.LookPath("rsync"); err != nil {
		return 0, nil, fmt.Errorf("no rsync")
	}
	cfg, err := sshPeer(ctx)
	if err != nil {
		return 0, nil, err
	}
	run := func(name string, args ...string) error {
		b, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %v: %v: %s", name, args, err, b)
		}
		return nil
	}
	// The peer's directory is this process's: other benches (other
	// worktrees) use the same sshd at once.
	dir := fmt.Sprintf("outpost-bench-carry-%d", os.Getpid())
	clean := func() { run("ssh", "-F", cfg, "peer", "rm", "-rf", dir) }
	defer clean()
	rsh := "ssh -F " + cfg
	full, err = best(2, func() (time.Duration, error) {
		clean()
		flushDisks(ctx)
		return timedD(func() error { return run("rsync", "-a", "-e", rsh, src+"/", "peer:"+dir+"/") })
	})
	if err != nil {
		return 0, nil, err
	}
	for i, set := range sets {
		if err := set.apply(src, src, files, rsyncSeed+uint64(i)); err != nil {
			return 0, nil, err
		}
		flushDisks(ctx)
		d, err := timedD(func() error { return run("rsync", "-a", "-e", rsh, src+"/", "peer:"+dir+"/") })
		if err != nil {
			return 0, nil, err
		}
		inc = append(inc, d)
	}
	return full, inc, nil
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
