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
	failName := fmt.Sprintf("f%03d", fail)
	workerHook = func(u *unpack, w *fileWrite) {
		if w.c <= failName {
			return
		}
		for deadline := time.Now().Add(10 * time.Second); u.failure() == nil && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	t.Cleanup(func() { workerHook = nil })
	f, dir, jp := journaledFS(t)
	dest := filepath.Join(dir, "dest")
	must(t, os.MkdirAll(filepath.Join(dest, fmt.Sprintf("f%03d", fail), "sub"), 0o755))
	var es []tarEntry
	for i := range n {
		es = append(es, tarEntry{name: fmt.Sprintf("f%03d", i), body: fmt.Sprintf("small %d", i)})
	}
	_, err := f.ExtractArchive(context.Background(), "dest", bytes.NewReader(makeTar(t, es...)), DefaultArchiveLimits)
	if !errors.Is(err, iofs.ErrInvalid) {
		t.Fatalf("unpack: %v, want a directory in the way", err)
	}
	for i := range fail {
		if got, want := readFile(t, filepath.Join(dest, fmt.Sprintf("f%03d", i))), fmt.Sprintf("small %d", i); got != want {
			t.Errorf("file %d before the failure = %q, want %q", i, got, want)
		}
	}
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
			var es []tarEntry
			for i := range n {
				es = append(es, tarEntry{name: fmt.Sprintf("f%03d", i), body: fmt.Sprintf("small %d", i)})
			}
			res, err := f.ExtractArchive(context.Background(), "dest", bytes.NewReader(makeTar(t, es...)), DefaultArchiveLimits)
			if !errors.Is(err, iofs.ErrInvalid) {
				t.Fatalf("unpack: %v, want a directory in the way", err)
			}
			for i := range fail {
				if got, want := readFile(t, filepath.Join(dest, fmt.Sprintf("f%03d", i))), fmt.Sprintf("small %d", i); got != want {
					t.Errorf("file %d before the failure = %q, want %q", i, got, want)
				}
			}
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
		var es []tarEntry
		for i := range 100 {
			es = append(es, tarEntry{name: fmt.Sprintf("f%03d", i), body: fmt.Sprintf("small %d", i)})
		}
		data := makeTar(t, es...)
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
	workerHook = func(u *unpack, w *fileWrite) {
		if w.c != "f003" {
			return
		}
		for deadline := time.Now().Add(10 * time.Second); u.failure() == nil && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	t.Cleanup(func() { workerHook = nil })
	f, dir, _ := journaledFS(t)
	dest := filepath.Join(dir, "dest")
	for _, d := range []string{"f003", "f005"} {
		must(t, os.MkdirAll(filepath.Join(dest, d, "sub"), 0o755))
	}
	var es []tarEntry
	for i := range 8 {
		es = append(es, tarEntry{name: fmt.Sprintf("f%03d", i), body: fmt.Sprintf("small %d", i)})
	}
	_, err := f.ExtractArchive(context.Background(), "dest", bytes.NewReader(makeTar(t, es...)), DefaultArchiveLimits)
	if !errors.Is(err, iofs.ErrInvalid) || !strings.Contains(err.Error(), "f003") {
		t.Fatalf("unpack: %v, want f003's directory in the way", err)
	}
	for i := range 3 {
		if got, want := readFile(t, filepath.Join(dest, fmt.Sprintf("f%03d", i))), fmt.Sprintf("small %d", i); got != want {
			t.Errorf("file %d before the failure = %q, want %q", i, got, want)
		}
	}
}
