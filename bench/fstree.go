package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	agentfs "github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/controlplane/client"
)

// The tree suite's shape: 20,000 files of 10,000 bytes on average
// (≈ 200 MB) in 200 directories; 20 of them hold the needle once.
const (
	treeFiles  = 20000
	treeDirs   = 200
	treeNeedle = "outpost_bench_needle_7f3a"
)

// benchTree: search of a literal over the tree through the API vs rg on
// the same tree; fs put -r / get -r of it (the CLI's path: a tar through
// fs/archive) vs scp -r and rsync -a to the loopback sshd; and the
// latency from a write on the agent's disk to its fs/watch event at the
// HTTP client.
func benchTree(ctx context.Context, e *env) ([]row, error) {
	src := filepath.Join(e.root, "tree")
	size, err := makeTree(src)
	if err != nil {
		return nil, err
	}
	tgt := e.cl.Agent(e.ws, e.id)
	var rows []row
	rows = append(rows, searchRow(ctx, tgt, src, size))
	rows = append(rows, treeRows(ctx, tgt, e, src, size)...)
	rows = append(rows, watchRow(ctx, tgt, e.root))
	return rows, nil
}

// makeTree writes the tree (pseudo-random text, fixed seed) and returns
// its size in bytes.
func makeTree(dir string) (int64, error) {
	r := rand.New(rand.NewPCG(7, 7))
	words := []string{"func", "return", "if", "err", "nil", "for", "range", "package", "import", "type", "struct", "the", "value", "context"}
	var total int64
	for i := range treeFiles {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i%treeDirs))
		if i < treeDirs {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return 0, err
			}
		}
		n := 5000 + r.IntN(10000)
		b := make([]byte, 0, n+64)
		for len(b) < n {
			b = append(b, words[r.IntN(len(words))]...)
			if r.IntN(8) == 0 {
				b = append(b, '\n')
			} else {
				b = append(b, ' ')
			}
		}
		if i%(treeFiles/20) == 0 {
			b = append(b, "\n// "+treeNeedle+"\n"...)
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.go", i)), b, 0o644); err != nil {
			return 0, err
		}
		total += int64(len(b))
	}
	return total, nil
}

// best runs f rounds times and keeps the shortest duration.
func best(rounds int, f func() (time.Duration, error)) (time.Duration, error) {
	var b time.Duration
	for range rounds {
		d, err := f()
		if err != nil {
			return 0, err
		}
		if b == 0 || d < b {
			b = d
		}
	}
	return b, nil
}

func searchRow(ctx context.Context, tgt *client.Target, src string, size int64) row {
	name := fmt.Sprintf("search a literal over %d files (%d MB) through the API vs rg", treeFiles, size/1e6)
	ours, err := best(3, func() (time.Duration, error) {
		return timedD(func() error {
			res, err := tgt.Search(ctx, client.SearchOptions{Path: "tree", Query: treeNeedle})
			if err == nil && len(res.Matches) != 20 {
				err = fmt.Errorf("search found %d matches, want 20", len(res.Matches))
			}
			return err
		})
	})
	if err != nil {
		return row{Name: name, Outpost: "error: " + err.Error()}
	}
	if _, err := exec.LookPath("rg"); err != nil {
		return row{Name: name, Outpost: msT(ours), Baseline: "skipped: no rg (apt-get install ripgrep)", Goal: "≤ 1.5× rg"}
	}
	rg, err := best(3, func() (time.Duration, error) {
		return timedD(func() error {
			out, err := exec.CommandContext(ctx, "rg", "-F", "-n", "--column", treeNeedle, src).Output()
			if err == nil && len(out) == 0 {
				err = errors.New("rg found nothing")
			}
			return err
		})
	})
	if err != nil {
		return row{Name: name, Outpost: msT(ours), Baseline: "rg: " + err.Error()}
	}
	return row{Name: name, Outpost: msT(ours), Baseline: msT(rg) + " (rg)", Ratio: fmt.Sprintf("%.2fx", ours.Seconds()/rg.Seconds()),
		Goal: "≤ 1.5× rg", Met: yesNo(ours.Seconds() <= 1.5*rg.Seconds())}
}

func treeRows(ctx context.Context, tgt *client.Target, e *env, src string, size int64) []row {
	label := fmt.Sprintf("%d files (%d MB)", treeFiles, size/1e6)
	local := filepath.Join(e.dir, "local-tree")
	put, err := best(2, func() (time.Duration, error) {
		return timedD(func() error { return putTreeBench(ctx, tgt, src, "tree-up") })
	})
	if err != nil {
		return []row{{Name: "fs put -r " + label, Outpost: "error: " + err.Error()}}
	}
	get, err := best(2, func() (time.Duration, error) {
		os.RemoveAll(local)
		return timedD(func() error { return getTreeBench(ctx, tgt, "tree", local) })
	})
	if err != nil {
		return []row{{Name: "fs get -r " + label, Outpost: "error: " + err.Error()}}
	}
	scpUp, scpDown, rsUp, rsDown, berr := treeBaselines(ctx, src, local+".b")
	if berr != nil {
		return []row{
			{Name: "fs put -r " + label, Outpost: msT(put), Baseline: "skipped: " + berr.Error()},
			{Name: "fs get -r " + label, Outpost: msT(get), Baseline: "skipped: " + berr.Error()},
		}
	}
	mk := func(name string, ours, scp, rs time.Duration) row {
		base := min(scp, rs)
		return row{Name: name, Outpost: msT(ours), Baseline: fmt.Sprintf("scp %s, rsync %s", msT(scp), msT(rs)),
			Ratio: fmt.Sprintf("%.2fx", base.Seconds()/ours.Seconds()), Goal: "≥ 1.0× the faster", Met: yesNo(ours <= base)}
	}
	return []row{
		mk("fs put -r "+label+" vs scp -r / rsync -a to loopback sshd", put, scpUp, rsUp),
		mk("fs get -r "+label+" vs scp -r / rsync -a from loopback sshd", get, scpDown, rsDown),
	}
}

// putTreeBench is the CLI's fs put -r: a tar of the local tree streamed
// to PUT fs/archive.
func putTreeBench(ctx context.Context, tgt *client.Target, local, remote string) error {
	fsys, err := agentfs.New(local)
	if err != nil {
		return err
	}
	defer fsys.Close()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(fsys.WriteArchive(ctx, ".", pw)) }()
	res, err := tgt.PutArchive(ctx, remote, pr, -1)
	pr.Close()
	if err == nil && res.Files != treeFiles {
		err = fmt.Errorf("put -r wrote %d files", res.Files)
	}
	return err
}

// getTreeBench is the CLI's fs get -r: GET fs/archive unpacked locally.
func getTreeBench(ctx context.Context, tgt *client.Target, remote, local string) error {
	if err := os.MkdirAll(local, 0o755); err != nil {
		return err
	}
	fsys, err := agentfs.New(local)
	if err != nil {
		return err
	}
	defer fsys.Close()
	rc, err := tgt.GetArchive(ctx, remote)
	if err != nil {
		return err
	}
	defer rc.Close()
	res, err := fsys.ExtractArchive(ctx, ".", rc, agentfs.DefaultArchiveLimits)
	if err == nil && res.Files != treeFiles {
		err = fmt.Errorf("get -r wrote %d files", res.Files)
	}
	return err
}

// treeBaselines copies src to the loopback sshd and back with scp -r and
// rsync -a, the best of two rounds each.
func treeBaselines(ctx context.Context, src, back string) (scpUp, scpDown, rsUp, rsDown time.Duration, err error) {
	for _, tool := range []string{"scp", "rsync"} {
		if _, err := exec.LookPath(tool); err != nil {
			return 0, 0, 0, 0, errors.New("no " + tool)
		}
	}
	cfg, err := sshPeer(ctx)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	run := func(name string, args ...string) error {
		b, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %v: %v: %s", name, args, err, b)
		}
		return nil
	}
	clean := func() { run("ssh", "-F", cfg, "peer", "rm", "-rf", "outpost-bench-tree"); os.RemoveAll(back) }
	defer clean()
	rsh := "ssh -F " + cfg
	steps := []struct {
		d *time.Duration
		f func() error
	}{
		{&scpUp, func() error { clean(); return run("scp", "-q", "-r", "-F", cfg, src, "peer:outpost-bench-tree") }},
		{&scpDown, func() error {
			os.RemoveAll(back)
			return run("scp", "-q", "-r", "-F", cfg, "peer:outpost-bench-tree", back)
		}},
		{&rsUp, func() error { clean(); return run("rsync", "-a", "-e", rsh, src+"/", "peer:outpost-bench-tree/") }},
		{&rsDown, func() error {
			os.RemoveAll(back)
			return run("rsync", "-a", "-e", rsh, "peer:outpost-bench-tree/", back+"/")
		}},
	}
	for _, s := range steps {
		if *s.d, err = best(2, func() (time.Duration, error) { return timedD(s.f) }); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	return scpUp, scpDown, rsUp, rsDown, nil
}

// watchRow measures write → event latency: the client watches, a file is
// written on the agent's disk, the time until its event arrives counts.
func watchRow(ctx context.Context, tgt *client.Target, root string) row {
	name := "fs/watch latency, write on disk → event at the HTTP client, p50 / p99 (ms)"
	dir := filepath.Join(root, "watched")
	os.MkdirAll(dir, 0o755)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan string, 1024)
	go tgt.Watch(wctx, "watched", false, 0, func(ev client.WatchEvent) error {
		got <- ev.Path
		return nil
	})
	// Until the stream is live, a probe is rewritten.
	for live := false; !live; {
		os.WriteFile(filepath.Join(dir, "probe"), []byte("p"), 0o644)
		select {
		case <-got:
			live = true
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return row{Name: name, Outpost: "error: " + ctx.Err().Error()}
		}
	}
	time.Sleep(200 * time.Millisecond)
	for len(got) > 0 {
		<-got
	}
	var lat latencies
	for i := range 200 {
		p := fmt.Sprintf("watched/f%03d", i)
		start := time.Now()
		if err := os.WriteFile(filepath.Join(root, p), []byte("x"), 0o644); err != nil {
			return row{Name: name, Outpost: "error: " + err.Error()}
		}
		timeout := time.After(5 * time.Second)
	wait:
		for {
			select {
			case q := <-got:
				if q == p {
					break wait
				}
			case <-timeout:
				return row{Name: name, Outpost: "error: no event for " + p}
			}
		}
		lat = append(lat, time.Since(start))
		time.Sleep(5 * time.Millisecond)
	}
	p50, p99 := lat.pct(50), lat.pct(99)
	return row{Name: name, Outpost: fmt.Sprintf("%.1f / %.1f", p50.Seconds()*1e3, p99.Seconds()*1e3), Goal: "p50 ≤ 50 ms", Met: yesNo(p50 <= 50*time.Millisecond)}
}

// timedD times f.
func timedD(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// msT renders d in whole milliseconds.
func msT(d time.Duration) string { return fmt.Sprintf("%.0f ms", d.Seconds()*1e3) }
