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

// carryRounds is how many incremental carries the p50 is taken over.
const carryRounds = 5

// benchCarry: a session over two agents of this process, "laptop" and
// "cloud", each with a root of its own. The laptop's root holds a mixed
// tree (small text files, medium and large random ones). First carry:
// swap to the cloud with carry: true (snapshot of the whole root, restore
// onto the empty cloud), next to rsync -a of the same tree to the loopback
// sshd. Then 1% of the files are rewritten on the active side and the
// session swaps back with carry, next to rsync -a of the same change; the
// bytes the restore sent are compared with the bytes changed. The p50 of
// carryRounds such swaps is the last row.
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

	// Rounds of 1% of the files rewritten on the active side, carried to
	// the other.
	r := rand.New(rand.NewPCG(11, 11))
	backends := map[string]string{"laptop": "carry-laptop", "cloud": "carry-cloud"}
	var lat latencies
	var changed, sent int64
	active := "cloud"
	var incCPU time.Duration
	for i := range carryRounds {
		n, err := changeFiles(r, dirs[backends[active]], files, len(files)/100)
		if err != nil {
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
		if i == 0 {
			changed, sent = n, s.LastCarry.TransferredBytes
		}
		active = to
	}
	rsFull, rsInc, rsErr := rsyncCarryBaseline(ctx, dirs["carry-laptop"], files, r)
	rows := []row{
		{Name: "carry, first (" + label + "): swap with carry to an empty agent vs rsync -a to loopback sshd", Outpost: msT(first),
			Goal: "≤ 1.5× rsync"},
		{Name: "carry, 1% of files changed: swap with carry vs rsync -a of the change", Outpost: msT(lat[0]), Goal: "≤ 1.0× rsync"},
		{Name: "carry, 1% changed: bytes sent vs bytes changed", Outpost: fmt.Sprintf("%d", sent), Baseline: fmt.Sprintf("%d changed", changed),
			Ratio: fmt.Sprintf("%.2fx", float64(sent)/float64(max(changed, 1))), Goal: "≤ 1.2×", Met: yesNo(float64(sent) <= 1.2*float64(changed))},
		{Name: fmt.Sprintf("carry, 1%% changed: swap with carry p50 of %d", carryRounds), Outpost: msT(lat.pct(50))},
		// CPU time depends less on the machine's load than the times
		// above: what the carry costs, whatever else runs.
		{Name: fmt.Sprintf("carry, 1%% changed: CPU time of the bench process (control plane and both agents) per carry, mean of %d", carryRounds),
			Outpost: msT(incCPU / carryRounds)},
		{Name: "carry, first: bytes sent vs tree size", Outpost: fmt.Sprintf("%d", firstSent), Baseline: fmt.Sprintf("%d", size)},
		{Name: "carry, first: CPU time of the bench process (control plane and both agents) during it", Outpost: msT(firstCPU),
			Ratio: fmt.Sprintf("%.2f cores", firstCPU.Seconds()/first.Seconds())},
		{Name: "carry suite: load average after (2 shared cores)", Outpost: loadAvg()},
	}
	if rsErr != nil {
		rows[0].Baseline, rows[1].Baseline = "skipped: "+rsErr.Error(), "skipped: "+rsErr.Error()
		return rows, nil
	}
	rows[0].Baseline, rows[0].Ratio, rows[0].Met = msT(rsFull)+" (rsync)", ratio(first, rsFull), yesNo(first.Seconds() <= 1.5*rsFull.Seconds())
	rows[1].Baseline, rows[1].Ratio, rows[1].Met = msT(rsInc)+" (rsync)", ratio(lat[0], rsInc), yesNo(lat[0] <= rsInc)
	return rows, nil
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

// changeFiles rewrites n of the files (paths under the carry-laptop root,
// mapped onto dir) with new random content of the same size, and returns
// the bytes changed.
func changeFiles(r *rand.Rand, dir string, files []string, n int) (int64, error) {
	var changed int64
	for range max(n, 1) {
		rel, err := filepath.Rel(filepath.Dir(filepath.Dir(filepath.Dir(files[0]))), files[r.IntN(len(files))])
		if err != nil {
			return 0, err
		}
		p := filepath.Join(dir, rel)
		fi, err := os.Stat(p)
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(p, randomBytes(r, int(fi.Size())), 0o644); err != nil {
			return 0, err
		}
		changed += fi.Size()
	}
	return changed, nil
}

// rsyncCarryBaseline copies src to the loopback sshd with rsync -a (best
// of two, each to an empty target), then rewrites 1% of a copy's files as
// the carry rounds do and times rsync -a of that change.
func rsyncCarryBaseline(ctx context.Context, src string, files []string, r *rand.Rand) (full, inc time.Duration, err error) {
	if _, err := exec.LookPath("rsync"); err != nil {
		return 0, 0, fmt.Errorf("no rsync")
	}
	cfg, err := sshPeer(ctx)
	if err != nil {
		return 0, 0, err
	}
	run := func(name string, args ...string) error {
		b, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %v: %v: %s", name, args, err, b)
		}
		return nil
	}
	clean := func() { run("ssh", "-F", cfg, "peer", "rm", "-rf", "outpost-bench-carry") }
	defer clean()
	rsh := "ssh -F " + cfg
	full, err = best(2, func() (time.Duration, error) {
		clean()
		flushDisks(ctx)
		return timedD(func() error { return run("rsync", "-a", "-e", rsh, src+"/", "peer:outpost-bench-carry/") })
	})
	if err != nil {
		return 0, 0, err
	}
	if _, err := changeFiles(r, src, files, len(files)/100); err != nil {
		return 0, 0, err
	}
	flushDisks(ctx)
	inc, err = timedD(func() error { return run("rsync", "-a", "-e", rsh, src+"/", "peer:outpost-bench-carry/") })
	return full, inc, err
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
