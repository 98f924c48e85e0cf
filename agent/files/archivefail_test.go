package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExtractArchiveFailureStopsBatch: a file that cannot be written (a
// directory in its way) ends the unpack with the files before it in
// place; the files after it that a worker takes once it failed are not
// written, not the rest of its batch (a batch is up to 256 files: before
// the batches at most 2 × unpackWorkers were queued).
// The journal is empty and no temporary file is left.
func TestExtractArchiveFailureStopsBatch(t *testing.T) {
	const n, fail = 200, 3
	// The workers hold each file after the failing one until the failure
	// is known (as a slow disk or a busy machine may): none of them may
	// then be written.
	failName := smallName(fail)
	holdUntilFailure(t, func(w *fileWrite) bool { return w.c > failName })
	f, dir, jp := journaledFS(t)
	dest := filepath.Join(dir, "dest")
	must(t, os.MkdirAll(filepath.Join(dest, fmt.Sprintf("f%03d", fail), "sub"), 0o755))
	_, err := f.ExtractArchive(context.Background(), "dest", bytes.NewReader(smallTar(t, n)), DefaultArchiveLimits)
	if !errors.Is(err, iofs.ErrInvalid) {
		t.Fatalf("unpack: %v, want a directory in the way", err)
	}
	checkSmallBefore(t, dest, fail)
	landed := 0
	for i := fail + 1; i < n; i++ {
		if _, err := os.Lstat(filepath.Join(dest, fmt.Sprintf("f%03d", i))); err == nil {
			landed++
		}
	}
	t.Logf("%d of the %d files after the failure landed", landed, n-fail-1)
	if landed > 0 {
		t.Errorf("%d files after the failure landed, want none", landed)
	}
	if n := journalSize(t, jp); n != 0 {
		t.Errorf("journal after the failed unpack: %d bytes, want empty", n)
	}
	if tf := tempFiles(t, dest); len(tf) > 0 {
		t.Errorf("temporary files left: %v", tf)
	}
}

// TestExtractArchiveFailureDropsPending: with small batches, a failure in
// one batch while the next is pending drops the pending files (none
// written, none left in the journal) without a hang; a context cancelled
// mid-stream leaves the files before it, an empty journal and no
// temporary file.
func TestExtractArchiveFailureDropsPending(t *testing.T) {
	for _, batch := range []int{1, 2, 4, 16} {
		t.Run(fmt.Sprintf("batch %d", batch), func(t *testing.T) {
			old := maxPendingFiles
			maxPendingFiles = batch
			t.Cleanup(func() { maxPendingFiles = old })
			const n, fail = 60, 9
			f, dir, jp := journaledFS(t)
			dest := filepath.Join(dir, "dest")
			must(t, os.MkdirAll(filepath.Join(dest, fmt.Sprintf("f%03d", fail), "sub"), 0o755))
			res, err := f.ExtractArchive(context.Background(), "dest", bytes.NewReader(smallTar(t, n)), DefaultArchiveLimits)
			if !errors.Is(err, iofs.ErrInvalid) {
				t.Fatalf("unpack: %v, want a directory in the way", err)
			}
			checkSmallBefore(t, dest, fail)
			// One batch is handed while the next is read: nothing past two
			// batches after the failure is written.
			for i := fail + 2*batch + 1; i < n; i++ {
				if _, err := os.Lstat(filepath.Join(dest, fmt.Sprintf("f%03d", i))); err == nil {
					t.Errorf("f%03d, %d files after the failure, landed", i, i-fail)
				}
			}
			if res.Files < fail {
				t.Errorf("result counts %d files, want at least %d", res.Files, fail)
			}
			if n := journalSize(t, jp); n != 0 {
				t.Errorf("journal after the failed unpack: %d bytes, want empty", n)
			}
			if tf := tempFiles(t, dest); len(tf) > 0 {
				t.Errorf("temporary files left: %v", tf)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		f, dir, jp := journaledFS(t)
		dest := filepath.Join(dir, "dest")
		data := smallTar(t, 100)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Cancelled once half the stream is read.
		r := &cancelAt{r: bytes.NewReader(data), at: len(data) / 2, cancel: cancel}
		res, err := f.ExtractArchive(ctx, "dest", r, DefaultArchiveLimits)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("unpack: %v, want cancelled", err)
		}
		if res.Files == 0 || res.Files == 100 {
			t.Errorf("%d files written, want some", res.Files)
		}
		for i := range res.Files {
			if got, want := readFile(t, filepath.Join(dest, fmt.Sprintf("f%03d", i))), fmt.Sprintf("small %d", i); got != want {
				t.Errorf("file %d = %q, want %q", i, got, want)
			}
		}
		if n := journalSize(t, jp); n != 0 {
			t.Errorf("journal after the cancelled unpack: %d bytes, want empty", n)
		}
		if tf := tempFiles(t, dest); len(tf) > 0 {
			t.Errorf("temporary files left: %v", tf)
		}
	})
}

// cancelAt reads r and calls cancel once at bytes were read.
type cancelAt struct {
	r      *bytes.Reader
	at, n  int
	cancel func()
}

func (c *cancelAt) Read(p []byte) (int, error) {
	if c.n < c.at {
		p = p[:min(len(p), c.at-c.n)]
	}
	n, err := c.r.Read(p)
	c.n += n
	if c.n >= c.at {
		c.cancel()
	}
	return n, err
}

// TestExtractArchiveReportsFirstFailure: of two files that cannot be
// written, the unpack reports the one first in the stream (the files
// before it are in place), also when the later one fails first.
func TestExtractArchiveReportsFirstFailure(t *testing.T) {
	holdUntilFailure(t, func(w *fileWrite) bool { return w.c == "f003" })
	f, dir, _ := journaledFS(t)
	dest := filepath.Join(dir, "dest")
	for _, d := range []string{"f003", "f005"} {
		must(t, os.MkdirAll(filepath.Join(dest, d, "sub"), 0o755))
	}
	_, err := f.ExtractArchive(context.Background(), "dest", bytes.NewReader(smallTar(t, 8)), DefaultArchiveLimits)
	if !errors.Is(err, iofs.ErrInvalid) || !strings.Contains(err.Error(), "f003") {
		t.Fatalf("unpack: %v, want f003's directory in the way", err)
	}
	checkSmallBefore(t, dest, 3)
}

// smallName is the name of file i of smallTar.
func smallName(i int) string { return fmt.Sprintf("f%03d", i) }

// smallTar is a tar of n small files: f000 holding "small 0", and so on.
func smallTar(t *testing.T, n int) []byte {
	t.Helper()
	es := make([]tarEntry, 0, n)
	for i := range n {
		es = append(es, tarEntry{name: smallName(i), body: fmt.Sprintf("small %d", i)})
	}
	return makeTar(t, es...)
}

// checkSmallBefore checks that the first k files of smallTar are in
// dest, whole: those before the failure.
func checkSmallBefore(t *testing.T, dest string, k int) {
	t.Helper()
	for i := range k {
		if got, want := readFile(t, filepath.Join(dest, smallName(i))), fmt.Sprintf("small %d", i); got != want {
			t.Errorf("file %d before the failure = %q, want %q", i, got, want)
		}
	}
}

// holdUntilFailure makes the unpack workers hold each file hold picks,
// before they write it, until the unpack has failed (at most 10 s): as
// a slow disk or a busy machine may. It is undone when t ends.
func holdUntilFailure(t *testing.T, hold func(*fileWrite) bool) {
	workerHook = func(u *unpack, w *fileWrite) {
		if !hold(w) {
			return
		}
		for deadline := time.Now().Add(10 * time.Second); u.failure() == nil && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	t.Cleanup(func() { workerHook = nil })
}
