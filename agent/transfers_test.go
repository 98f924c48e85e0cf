package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/wire"
)

// tempFiles lists upload temporary files in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if strings.HasPrefix(e.Name(), files.TempPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitUntil polls cond for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOrphanedTransfersExpire checks that an upload nobody finishes is
// aborted after the idle timeout (old file intact, no temporary file), an
// open download is closed, and use keeps a transfer alive.
func TestOrphanedTransfersExpire(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := files.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Generous against a loaded machine: a download used every tenth of
	// the idle period must outlive several idle periods only if use
	// resets the clock.
	const idle, useEvery = time.Second, 100 * time.Millisecond
	ts := newTransfers(idle)
	defer ts.close()

	u, err := f.BeginWrite("f.txt", files.WriteOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.WriteAt([]byte("half"), 0); err != nil {
		t.Fatal(err)
	}
	up, err := ts.add(&openTransfer{upload: u})
	if err != nil {
		t.Fatal(err)
	}
	file, e, err := f.Open("f.txt")
	if err != nil {
		t.Fatal(err)
	}
	down, err := ts.add(&openTransfer{file: file, size: e.Size})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tempFiles(t, root)); n != 1 {
		t.Fatalf("%d temporary files during the upload", n)
	}
	// Keep the download in use for twice the idle period.
	use := time.NewTicker(useEvery)
	defer use.Stop()
	for range 2 * idle / useEvery {
		<-use.C
		if _, err := ts.get(down); err != nil {
			t.Fatalf("a download in use expired: %v", err)
		}
	}
	waitUntil(t, "the idle upload to be aborted", func() bool { return len(tempFiles(t, root)) == 0 })
	if _, err := ts.get(up); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("expired upload: %v, want not_found", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "f.txt")); string(b) != "old" {
		t.Fatalf("file now %q", b)
	}
	// The expiry takes the transfer out of the table, then closes its file
	// (not under the table's lock): wait for both.
	waitUntil(t, "the idle download to go and its file to close", func() bool {
		_, err := file.Stat()
		return ts.len() == 0 && errors.Is(err, os.ErrClosed)
	})
}

// TestTransfersCloseEndsAll checks that stopping the agent aborts uploads
// and refuses new transfers.
func TestTransfersCloseEndsAll(t *testing.T) {
	root := t.TempDir()
	f, err := files.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts := newTransfers(time.Hour)
	u, err := f.BeginWrite("new.txt", files.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.add(&openTransfer{upload: u}); err != nil {
		t.Fatal(err)
	}
	ts.close()
	ts.close()
	if n := len(tempFiles(t, root)); n != 0 || ts.len() != 0 {
		t.Fatalf("after close: %d temporary files, %d transfers", n, ts.len())
	}
	u2, _ := f.BeginWrite("new2.txt", files.WriteOptions{})
	if _, err := ts.add(&openTransfer{upload: u2}); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("add after close: %v", err)
	}
	if n := len(tempFiles(t, root)); n != 0 {
		t.Fatalf("refused upload left %d temporary files", n)
	}
}

// A handle not open says why: opened by an earlier run of the agent
// (restarted), or of this run (finished or idle); both are not_found.
func TestMissingHandleSaysRestarted(t *testing.T) {
	earlier, now := newTransfers(time.Minute), newTransfers(time.Minute)
	for earlier.run == now.run {
		earlier = newTransfers(time.Minute)
	}
	h, err := earlier.add(&openTransfer{})
	if err != nil {
		t.Fatal(err)
	}
	defer earlier.take(h)
	mine, err := now.add(&openTransfer{})
	if err != nil {
		t.Fatal(err)
	}
	now.take(mine)
	for _, c := range []struct {
		h, want string
	}{
		{h, "the agent restarted"},
		{mine, "finished, or idle"},
		{"tforeign", "finished, or idle"},
	} {
		_, err := now.get(c.h)
		if !errors.Is(err, wire.ErrNotFound) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("get(%q): %v, want not_found saying %q", c.h, err, c.want)
		}
	}
}
