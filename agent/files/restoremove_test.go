package files

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// listTree is every path under dir with its type, sorted.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel+" "+fi.Mode().Type().String())
		return nil
	})
	slices.Sort(out)
	return out
}

// TestRestoreDirectoryMovedOutside: a directory of the restore (or its
// parent) that a concurrent process moves out of the root while the
// restore runs must not receive a file, a rename or a chtimes of the
// restore: the names outside the root after the move are as the move
// left them. The restore may fail or write the file at its path inside
// the root, never in the moved directory. (A temporary file moved out
// while open still gets the bytes written to its descriptor, as it did
// before a restore kept its directories open: that is the file the agent
// opened, not a name it resolves.)
func TestRestoreDirectoryMovedOutside(t *testing.T) {
	for _, tc := range []struct {
		name string
		move string // what is moved out: "a/d" or "a"
		mid  bool   // moved while a file of it is being written
		stop bool   // then the restore is aborted
	}{
		{"dir between files", "a/d", false, false},
		{"parent between files", "a", false, false},
		{"dir during a file", "a/d", true, false},
		{"parent during a file", "a", true, false},
		{"dir during a file, aborted", "a/d", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srcDir, dstDir, outDir := t.TempDir(), t.TempDir(), t.TempDir()
			must(t, os.MkdirAll(filepath.Join(srcDir, "a/d"), 0o755))
			must(t, os.WriteFile(filepath.Join(srcDir, "a/d/f1"), []byte("first file"), 0o644))
			big := make([]byte, 1<<20) // several chunks
			rng := rand.New(rand.NewPCG(5, 5))
			for i := range big {
				big[i] = byte(rng.Uint32())
			}
			must(t, os.WriteFile(filepath.Join(srcDir, "a/d/f2"), big, 0o644))
			s, err := newFS(t, srcDir).Scan(context.Background(), ".", ScanOptions{})
			must(t, err)
			var f1, f2 []Sum
			for _, e := range s.Entries {
				for _, ch := range e.Chunks {
					switch e.Path {
					case "a/d/f1":
						f1 = append(f1, ch.Sum)
					case "a/d/f2":
						f2 = append(f2, ch.Sum)
					}
				}
			}
			if len(f1) != 1 || len(f2) < 3 {
				t.Fatalf("chunks: f1 %d, f2 %d", len(f1), len(f2))
			}
			dst := newFS(t, dstDir)
			ctx := context.Background()
			r, err := dst.BeginRestore(ctx, ".", s.Entries, RestoreOptions{})
			must(t, err)
			defer r.Abort()
			put := func(sum Sum) error {
				data, err := s.AppendChunk(nil, sum)
				must(t, err)
				return r.Put(sum, data)
			}
			// f1 is written (its directory opened and kept); with mid,
			// f2's first chunk too (its temporary file made).
			must(t, put(f1[0]))
			rest := f2
			if tc.mid {
				must(t, put(f2[0]))
				rest = f2[1:]
			}
			moved := filepath.Join(outDir, filepath.Base(tc.move))
			must(t, os.Rename(filepath.Join(dstDir, tc.move), moved))
			before := listTree(t, outDir)
			var restErr error
			if tc.stop {
				rest, restErr = nil, errors.New("aborted")
			}
			for _, sum := range rest {
				if restErr = put(sum); restErr != nil {
					break
				}
			}
			if restErr == nil && !tc.stop {
				_, restErr = r.Commit(ctx)
			}
			r.Abort()
			if after := listTree(t, outDir); !slices.Equal(before, after) {
				t.Errorf("outside the root, after the move:\n%q\nafter the restore (err %v):\n%q", before, restErr, after)
			}
			if restErr == nil {
				if got := readFile(t, filepath.Join(dstDir, "a/d/f2")); got != string(big) {
					t.Errorf("restore succeeded but a/d/f2 inside the root has %d bytes", len(got))
				}
			}
		})
	}
}

// TestRestoreAbortClosesDirectories: a restore of more directories than
// it keeps open, ended by Abort halfway (after a Put refused for a
// directory replaced by a symlink, or plainly), leaves no directory or
// temporary file open and no temporary file on disk.
func TestRestoreAbortClosesDirectories(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("open files are counted in /proc/self/fd")
	}
	for _, broken := range []bool{false, true} {
		t.Run(map[bool]string{false: "abort", true: "refused then abort"}[broken], func(t *testing.T) {
			srcDir, dstDir := t.TempDir(), t.TempDir()
			n := maxIdleDirs + 100
			for i := range n {
				d := filepath.Join(srcDir, "top", fmt.Sprintf("d%03d", i))
				must(t, os.MkdirAll(d, 0o755))
				// Two chunks, so half its chunks leave a file open.
				data := make([]byte, 64<<10)
				rng := rand.New(rand.NewPCG(uint64(i), 9))
				for j := range data {
					data[j] = byte(rng.Uint32())
				}
				must(t, os.WriteFile(filepath.Join(d, "f"), data, 0o644))
			}
			s, err := newFS(t, srcDir).Scan(context.Background(), ".", ScanOptions{})
			must(t, err)
			dst := newFS(t, dstDir)
			fds := func() int {
				es, _ := os.ReadDir("/proc/self/fd")
				return len(es)
			}
			before := fds()
			r, err := dst.BeginRestore(context.Background(), ".", s.Entries, RestoreOptions{})
			must(t, err)
			lack := r.Lack()
			if broken {
				victim := filepath.Join(dstDir, "top", fmt.Sprintf("d%03d", n-1))
				must(t, os.RemoveAll(victim))
				must(t, os.Symlink("d000", victim))
			}
			var putErr error
			for i, sum := range lack {
				if i%2 == 1 && i < len(lack)-2 {
					continue // every other chunk: files stay open
				}
				data, err := s.AppendChunk(nil, sum)
				must(t, err)
				if putErr = r.Put(sum, data); putErr != nil {
					break
				}
			}
			if broken && !errors.Is(putErr, ErrUnsafeEntry) {
				t.Errorf("Put into a directory turned symlink: %v, want %v", putErr, ErrUnsafeEntry)
			}
			if !broken && putErr != nil {
				t.Fatal(putErr)
			}
			if open := fds(); open < before+maxIdleDirs {
				t.Fatalf("%d files open during the restore, %d before: the test meant more than %d directories open", open, before, maxIdleDirs)
			}
			r.Abort()
			if after := fds(); after > before {
				t.Errorf("%d files open after Abort, %d before", after, before)
			}
			filepath.Walk(dstDir, func(p string, fi os.FileInfo, err error) error {
				if err == nil && strings.HasPrefix(fi.Name(), TempPrefix) {
					t.Errorf("temporary file left: %s", p)
				}
				return nil
			})
		})
	}
}

// TestRestoreCrashSweptByJournal: a restore a crash interrupts leaves
// each file old or new, and the next OpenJournal removes the temporary
// files it made in the directories it kept open (recorded by their
// paths from the root).
func TestRestoreCrashSweptByJournal(t *testing.T) {
	srcDir, dstDir := t.TempDir(), t.TempDir()
	journal := filepath.Join(t.TempDir(), "agent.json.writes")
	big := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(8, 8))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	must(t, os.MkdirAll(filepath.Join(srcDir, "a/b"), 0o755))
	must(t, os.WriteFile(filepath.Join(srcDir, "a/b/x"), big, 0o644))
	must(t, os.WriteFile(filepath.Join(srcDir, "a/y"), []byte("new y"), 0o644))
	must(t, os.MkdirAll(filepath.Join(dstDir, "a/b"), 0o755))
	must(t, os.WriteFile(filepath.Join(dstDir, "a/b/x"), []byte("old x"), 0o644))
	must(t, os.WriteFile(filepath.Join(dstDir, "a/y"), []byte("old y"), 0o644))
	s, err := newFS(t, srcDir).Scan(context.Background(), ".", ScanOptions{})
	must(t, err)
	dst, err := New(dstDir)
	must(t, err)
	if _, err := dst.OpenJournal(journal); err != nil {
		t.Fatal(err)
	}
	r, err := dst.BeginRestore(context.Background(), ".", s.Entries, RestoreOptions{})
	must(t, err)
	var xs, ys []Sum
	for _, e := range s.Entries {
		for _, ch := range e.Chunks {
			switch e.Path {
			case "a/b/x":
				xs = append(xs, ch.Sum)
			case "a/y":
				ys = append(ys, ch.Sum)
			}
		}
	}
	putEach(t, r, s, append(ys, xs[:len(xs)/2]...))
	if n := len(tempFiles(t, dstDir)); n != 1 {
		t.Fatalf("%d temporary files while x is half written, want 1", n)
	}
	// The crash: nothing of the restore ends (its descriptors are closed
	// as a dying process's are, without a removal).
	crashRestore(r)
	dst.Close()

	if got := readFile(t, filepath.Join(dstDir, "a/y")); got != "new y" {
		t.Errorf("a/y after the crash = %q, want the new content", got)
	}
	if got := readFile(t, filepath.Join(dstDir, "a/b/x")); got != "old x" {
		t.Errorf("a/b/x after the crash = %q, want the old content", got)
	}
	fs2, err := New(dstDir)
	must(t, err)
	defer fs2.Close()
	removed, err := fs2.OpenJournal(journal)
	must(t, err)
	if len(removed) != 1 || !strings.HasPrefix(removed[0], "a/b/"+TempPrefix) {
		t.Errorf("the sweep removed %v, want the one temporary file in a/b", removed)
	}
	if tmp := tempFiles(t, dstDir); len(tmp) != 0 {
		t.Errorf("temporary files left after the sweep: %v", tmp)
	}
}
