package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestChangeSetsSeenByRsync: two change sets that rewrite the same file
// (same size) within one second, each followed by rsync -a as the carry
// suite's baseline runs it: rsync must copy both changes, or the baseline
// moves fewer bytes than the carries it is compared with (rsync -a's
// quick check compares whole seconds of mtime).
func TestChangeSetsSeenByRsync(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Fatal("the carry suite's baseline needs rsync:", err)
	}
	src, dst := t.TempDir(), t.TempDir()
	var files []string
	for i := range 3 {
		p := filepath.Join(src, fmt.Sprintf("d/f%d", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, randomBytes(rand.New(rand.NewPCG(uint64(i), 1)), 8192), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	sets := []changeSet{{idx: []int{0, 1}}, {idx: []int{1, 2}}, {idx: []int{1}}}
	rsync := func() {
		if b, err := exec.Command("rsync", "-a", src+"/", dst+"/").CombinedOutput(); err != nil {
			t.Fatalf("rsync: %v: %s", err, b)
		}
	}
	// The sets and their copies in one second, as a change set after a
	// short rsync of the one before may be.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
	rsync()
	for i, set := range sets {
		if err := set.apply(src, src, files, rsyncSeed+uint64(i)); err != nil {
			t.Fatal(err)
		}
		rsync()
		for _, p := range files {
			rel, _ := filepath.Rel(src, p)
			want, _ := os.ReadFile(p)
			got, _ := os.ReadFile(filepath.Join(dst, rel))
			if !bytes.Equal(got, want) {
				t.Errorf("after set %d, rsync -a left %s as it was", i, rel)
			}
		}
	}
}

// TestCarryFirstRunsLikeForLike runs the carry suite on a small tree with
// three first runs: the carries and rsync alternate (carry first, then
// rsync first, ...), both sides report the same statistics (a median and
// a best of three), every run copied the whole tree into a directory of
// its own, and rsync's copies are siblings of the carry's (the same
// parent, so ext4 allocates both sides' inodes alike). It needs the
// loopback sshd (../shared/tools/ssh-peer.sh, or scripts/ssh-peer.sh) and
// rsync, as the suite.
func TestCarryFirstRunsLikeForLike(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Fatal("the carry suite's baseline needs rsync:", err)
	}
	t.Chdir("..") // the bench runs from the repository's root
	defer func(mb, runs, rounds int) { carryMB, carryFirstRuns, carryRounds = mb, runs, rounds }(carryMB, carryFirstRuns, carryRounds)
	carryMB, carryFirstRuns, carryRounds = 2, 3, 1
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := newEnv(ctx, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rows, err := benchCarry(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	byName := func(prefix string) row {
		for _, r := range rows {
			if strings.HasPrefix(r.Name, prefix) {
				return r
			}
		}
		t.Fatalf("no row %q in %+v", prefix, rows)
		return row{}
	}
	first := byName("carry, first (")
	if !strings.Contains(first.Name, "median of 3 runs each") || !strings.Contains(first.Outpost, "(best ") ||
		!strings.Contains(first.Baseline, "(best ") || !strings.Contains(first.Ratio, "(best ") || strings.HasPrefix(first.Baseline, "skipped") {
		t.Fatalf("the first carry's row does not give both sides' median and best: %+v", first)
	}
	var sides []string
	for _, run := range strings.Split(byName("carry, first: the runs").Outpost, ", ") {
		sides = append(sides, strings.Fields(run)[0])
	}
	if got := strings.Join(sides, " "); got != "carry rsync rsync carry carry rsync" {
		t.Fatalf("runs in the order %q, want the sides alternating which goes first", got)
	}
	// Each run's copy is whole, and they are all siblings.
	tree := countFiles(t, filepath.Join(e.dir, "carry-laptop"))
	for _, pattern := range []string{"carry-cloud-*", "rsync-copy-*"} {
		// The copies are the directories (an agent's journal, root +
		// ".writes", is a file next to its root).
		var copies []string
		matches, _ := filepath.Glob(filepath.Join(e.dir, pattern))
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.IsDir() {
				copies = append(copies, m)
			}
		}
		if len(copies) != 3 {
			t.Fatalf("%d copies %s in the bench's directory, want 3: %v", len(copies), pattern, copies)
		}
		for _, c := range copies {
			if n := countFiles(t, c); n != tree {
				t.Fatalf("%s holds %d files, the tree %d", c, n, tree)
			}
		}
	}
}

// countFiles counts the regular files and links under dir.
func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCarryFlagsChecked: the carry suite refuses a number of first runs
// that is not a positive odd number (0 or less ran once, under a row that
// says "median of N"; with an even N the row's "median" was the lower of
// the two middle runs, for 2 the best), and a tree or number of change
// sets under 1, before it makes its tree.
func TestCarryFlagsChecked(t *testing.T) {
	t.Chdir("..")
	defer func(mb, runs, rounds int) { carryMB, carryFirstRuns, carryRounds = mb, runs, rounds }(carryMB, carryFirstRuns, carryRounds)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := newEnv(ctx, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, tc := range []struct {
		mb, runs, rounds int
		flag             string
	}{
		{2, 0, 1, "-carry-first-runs"},
		{2, -1, 1, "-carry-first-runs"},
		{2, 2, 1, "-carry-first-runs"},
		{2, 1, 0, "-carry-rounds"},
		{0, 1, 1, "-carry-mb"},
	} {
		carryMB, carryFirstRuns, carryRounds = tc.mb, tc.runs, tc.rounds
		if err := checkCarryFlags(); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("mb %d, runs %d, rounds %d: checkCarryFlags says %v, want an error naming %s", tc.mb, tc.runs, tc.rounds, err, tc.flag)
		}
		rows, err := func() (rows []row, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return benchCarry(ctx, e)
		}()
		if err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("mb %d, runs %d, rounds %d: the suite gave %d rows and %v, want an error naming %s", tc.mb, tc.runs, tc.rounds, len(rows), err, tc.flag)
		}
		if _, err := os.Stat(filepath.Join(e.dir, "carry-laptop")); err == nil {
			t.Fatalf("mb %d, runs %d, rounds %d: the suite made its tree before refusing its flags", tc.mb, tc.runs, tc.rounds)
		}
	}
	carryMB, carryFirstRuns, carryRounds = 2, 3, 1
	if err := checkCarryFlags(); err != nil {
		t.Fatal(err)
	}
}

// TestCarryDiskChecked: the suite refuses to start when the file system
// of its directory has not room for what its runs keep until it ends
// (the tree, two copies a first run, the store's copy), instead of
// filling a shared disk part way through.
func TestCarryDiskChecked(t *testing.T) {
	dir := t.TempDir()
	free, err := freeBytes(dir)
	if err != nil || free <= 0 {
		t.Fatalf("free bytes of %s: %d, %v", dir, free, err)
	}
	if err := checkCarryDisk(dir, 2, 3); err != nil {
		t.Fatalf("a 2 MiB tree, 3 runs: %v", err)
	}
	mb := int(free>>20)/4 + 1 // 8 trees of it (3 runs) do not fit
	err = checkCarryDisk(dir, mb, 3)
	if err == nil || !strings.Contains(err.Error(), "free") {
		t.Fatalf("a %d MiB tree, 3 runs, %d MiB free: %v, want a refusal", mb, free>>20, err)
	}
	if need := carryDiskNeed(1024, 3); need != 8<<30 {
		t.Fatalf("a 1 GiB tree, 3 runs: need %d bytes, want 8 GiB", need)
	}
}

// TestRsyncChangesMoveOnlyTheirSet: each timed rsync -a of a change set
// moves that set's files and no others. rsync's full copies are made
// before the incremental carries, which change the laptop's tree (the
// carries' own change sets, carried back to it); rsync's copy must be
// brought to the tree the carries left before its sets are timed, or its
// first set also moves every file the carries changed (the baseline
// pays for the carries' changes too). The rsync here is a wrapper that
// logs how many files each run of it transferred (--stats).
func TestRsyncChangesMoveOnlyTheirSet(t *testing.T) {
	real, err := exec.LookPath("rsync")
	if err != nil {
		t.Fatal("the carry suite's baseline needs rsync:", err)
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "moved.log")
	script := "#!/bin/sh\nout=$(" + real + " --stats \"$@\" 2>&1); rc=$?\nprintf '%s\\n' \"$out\"\n" +
		"printf '%s\\n' \"$out\" | sed -n 's/^Number of regular files transferred: //p' | tr -d , >> " + log + "\nexit $rc\n"
	if err := os.WriteFile(filepath.Join(bin, "rsync"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Chdir("..")
	defer func(mb, runs, rounds int) { carryMB, carryFirstRuns, carryRounds = mb, runs, rounds }(carryMB, carryFirstRuns, carryRounds)
	carryMB, carryFirstRuns, carryRounds = 2, 1, 3
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := newEnv(ctx, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rows, err := benchCarry(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if strings.HasPrefix(r.Baseline, "skipped") {
			t.Fatalf("rsync's baseline was skipped: %+v", r)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.Fields(string(b))
	if len(moved) < 1+carryRounds {
		t.Fatalf("rsync ran %d times (%q), want the full copy and %d change sets", len(moved), moved, carryRounds)
	}
	// A 2 MiB tree has under 100 files: each set changes one.
	for i, n := range moved[len(moved)-carryRounds:] {
		if n != "1" {
			t.Errorf("rsync -a of change set %d moved %s files, the set changed 1 (every run: %q)", i, n, moved)
		}
	}
}

// TestSSHPeerWithoutSharedTools: CI runs on a clean clone (/tmp/ci-clone),
// which has no ../shared/tools next to it, and its go test ./... runs the
// carry suite's tests over the loopback sshd: the bench then starts it
// with the repository's own scripts/ssh-peer.sh.
func TestSSHPeerWithoutSharedTools(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(repo, "scripts", "ssh-peer.sh"))
	if err != nil {
		t.Fatal("the repository has no ssh peer script of its own:", err)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if err := os.MkdirAll(filepath.Join(clone, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "scripts", "ssh-peer.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(clone)
	if _, err := os.Stat("../shared"); err == nil {
		t.Fatal("the clone has a ../shared next to it")
	}
	sshOnce, sshCfg, sshErr = sync.Once{}, "", nil
	defer func() { sshOnce, sshCfg, sshErr = sync.Once{}, "", nil }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := sshPeer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := exec.CommandContext(ctx, "ssh", "-F", cfg, "peer", "id -un").Output(); err != nil || strings.TrimSpace(string(b)) != "bench" {
		t.Fatalf("ssh peer id -un: %q, %v", b, err)
	}
}

// The store goes to /dev/shm by default only in a run of the carry suite
// alone: a run of every suite, or of carry with others, keeps every
// suite's store in the bench's directory (their rows do not name it), and
// the carry row says the store is in memory when it is.
func TestStorePlaceDefaultCarryOnly(t *testing.T) {
	for _, want := range []map[string]bool{{}, {"carry": true, "echo": true}, {"echo": true}} {
		if d := defaultStateDir(want); d != "" {
			t.Errorf("-rows %v: the store in %q by default, want the bench's directory", want, d)
		}
	}
	fi, err := os.Stat(storeDirDefault)
	if err != nil || !fi.IsDir() {
		return
	}
	if d := defaultStateDir(map[string]bool{"carry": true}); d != storeDirDefault {
		t.Errorf("-rows carry: the store in %q, want %s", d, storeDirDefault)
	}
	old := cpStateDir
	defer func() { cpStateDir = old }()
	cpStateDir = storeDirDefault
	if p := storePlace(); isTmpfs(storeDirDefault) && !strings.Contains(p, "tmpfs") {
		t.Errorf("the row says the store is in %q, not that it is in memory", p)
	}
}
