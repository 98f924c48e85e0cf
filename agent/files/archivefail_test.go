package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestExtractArchiveFailureStopsBatch: a file that cannot be written (a
// directory in its way) ends the unpack with the files before it in
// place; of the files after it, only those a worker had already taken
// when it failed may land, not the rest of its batch (a batch is up to
// 256 files: before the batches at most 2 × unpackWorkers were queued).
// The journal is empty and no temporary file is left.
func TestExtractArchiveFailureStopsBatch(t *testing.T) {
	const n, fail = 200, 3
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
	// The files the other workers had taken, and the few they take while
	// the failing one reports: far from the batch's rest.
	if landed > 4*unpackWorkers {
		t.Errorf("%d files after the failure landed, want at most %d (the ones being written alongside)", landed, 4*unpackWorkers)
	}
	if n := journalSize(t, jp); n != 0 {
		t.Errorf("journal after the failed unpack: %d bytes, want empty", n)
	}
	if tf := tempFiles(t, dest); len(tf) > 0 {
		t.Errorf("temporary files left: %v", tf)
	}
}
