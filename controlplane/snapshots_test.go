package controlplane

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// snapEnv is a control plane with two real agents, "laptop" and "cloud",
// each serving a directory of its own.
type snapEnv struct {
	s                   *Server
	cl                  *client.Client
	laptop, cloud       *client.Target
	laptopDir, cloudDir string
}

func newSnapEnv(t *testing.T, cfg Config) *snapEnv {
	t.Helper()
	s := startServer(t, cfg)
	cl := adminClient(s)
	if _, err := cl.CreateWorkspace(context.Background(), "w1"); err != nil {
		t.Fatal(err)
	}
	e := &snapEnv{s: s, cl: cl, laptopDir: t.TempDir(), cloudDir: t.TempDir()}
	e.laptop = realAgent(t, s, "w1", "laptop", e.laptopDir)
	e.cloud = realAgent(t, s, "w1", "cloud", e.cloudDir)
	return e
}

// writeMixedTree makes small text files, a few large random ones, an
// empty file, modes, nested directories and symlinks.
func writeMixedTree(t testing.TB, dir string) {
	t.Helper()
	for i := range 40 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("src/pkg%d/file%d.go", i%5, i)), fmt.Sprintf("package pkg\n// file %d\n", i), 0o644)
	}
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("data/blob%d.bin", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, pseudoRandom(1<<20+i*77777, uint64(i+1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "bin/run.sh"), "#!/bin/sh\necho hi\n", 0o755)
	writeFile(t, filepath.Join(dir, "empty"), "", 0o640)
	if err := os.Symlink("src/pkg0", filepath.Join(dir, "latest")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../bin/run.sh", filepath.Join(dir, "data/run")); err != nil {
		t.Fatal(err)
	}
}

// treeDigest describes every entry under dir: type, mode and the sha256
// of a file, the target of a link.
func treeDigest(t testing.TB, dir string) map[string]string {
	t.Helper()
	out, err := digestTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// digestTree is treeDigest's walk, for a caller that may not stop the
// test (a hook on a server goroutine) or that walks a tree still being
// written, where an entry can vanish (a temporary file renamed) between
// the listing and its Lstat: it returns the error.
func digestTree(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "link " + l
		case fi.IsDir():
			out[rel] = "dir " + fi.Mode().Perm().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %v %x", fi.Mode().Perm(), sha256.Sum256(b))
		}
		return nil
	})
	return out, err
}

func sameTree(t testing.TB, want, got string) {
	t.Helper()
	w, g := treeDigest(t, want), treeDigest(t, got)
	for k, v := range w {
		if k == "." {
			continue
		}
		if g[k] != v {
			t.Errorf("%s: got %q, want %q", k, g[k], v)
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			t.Errorf("%s: extra entry %q", k, g[k])
		}
	}
}

func TestSnapshotCreateRestoreIncremental(t *testing.T) {
	e := newSnapEnv(t, testConfig(t))
	ctx := context.Background()
	writeMixedTree(t, e.laptopDir)
	writeFile(t, filepath.Join(e.cloudDir, "stale.txt"), "only on the cloud", 0o644)

	sn, err := e.laptop.CreateSnapshot(ctx, client.CreateSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if sn.Files != 45 || sn.NewBytes != sn.Bytes || sn.Source.Agent != "laptop" {
		t.Fatalf("first snapshot: %+v", sn)
	}
	res, err := e.cloud.RestoreSnapshot(ctx, sn.ID, client.RestoreSnapshotRequest{Delete: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 45 || res.TransferredBytes != sn.Bytes {
		t.Fatalf("first restore: %+v, want all %d bytes sent", res, sn.Bytes)
	}
	sameTree(t, e.laptopDir, e.cloudDir)

	// Change 10 bytes in the middle of one blob: the second snapshot stores,
	// and the second restore sends, one or two chunks.
	f, err := os.OpenFile(filepath.Join(e.laptopDir, "data/blob1.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("0123456789"), 600_000)
	f.Close()
	sn2, err := e.laptop.CreateSnapshot(ctx, client.CreateSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if sn2.NewBytes == 0 || sn2.NewBytes > 2*256<<10 {
		t.Fatalf("second snapshot stored %d new bytes, want one or two chunks", sn2.NewBytes)
	}
	res, err = e.cloud.RestoreSnapshot(ctx, sn2.ID, client.RestoreSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.TransferredBytes != sn2.NewBytes {
		t.Fatalf("second restore sent %d bytes, want the %d new ones", res.TransferredBytes, sn2.NewBytes)
	}
	sameTree(t, e.laptopDir, e.cloudDir)

	snaps, err := e.cl.ListSnapshots(ctx, "w1")
	if err != nil || len(snaps) != 2 || snaps[0].ID != sn.ID || snaps[1].ID != sn2.ID {
		t.Fatalf("list: %+v, %v", snaps, err)
	}
	// Deleting the first frees only the chunk the second does not use.
	before, _, _ := e.s.snaps.usage(ctx, "w1")
	if err := e.cl.DeleteSnapshot(ctx, "w1", sn.ID); err != nil {
		t.Fatal(err)
	}
	after, _, _ := e.s.snaps.usage(ctx, "w1")
	have, _ := e.s.snaps.have(ctx, "w1")
	if before != sn.Bytes+sn2.NewBytes || after != sn2.Bytes || len(have) == 0 {
		t.Fatalf("usage %d before the delete (want %d), %d after (want %d)", before, sn.Bytes+sn2.NewBytes, after, sn2.Bytes)
	}
	if err := e.cl.DeleteSnapshot(ctx, "w1", sn2.ID); err != nil {
		t.Fatal(err)
	}
	if have, _ := e.s.snaps.have(ctx, "w1"); len(have) != 0 {
		t.Fatalf("%d chunks left after every snapshot was deleted", len(have))
	}
	if err := e.cl.DeleteSnapshot(ctx, "w1", sn2.ID); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("deleting a deleted snapshot: %v", err)
	}
}

func TestSnapshotQuota(t *testing.T) {
	cfg := testConfig(t)
	cfg.SnapshotQuota = 2 << 20
	e := newSnapEnv(t, cfg)
	writeMixedTree(t, e.laptopDir)
	_, err := e.laptop.CreateSnapshot(context.Background(), client.CreateSnapshotRequest{})
	if we := wire.AsError(err); err == nil || we.Code != wire.CodeInsufficientStorage || we.Reason != wire.ReasonSnapshotQuota {
		t.Fatalf("over the quota: %v, want insufficient_storage/snapshot_quota", err)
	}
	if snaps, _ := e.cl.ListSnapshots(context.Background(), "w1"); len(snaps) != 0 {
		t.Fatalf("a refused snapshot was recorded: %+v", snaps)
	}
	// A smaller tree fits.
	if _, err := e.laptop.CreateSnapshot(context.Background(), client.CreateSnapshotRequest{Path: "src"}); err != nil {
		t.Fatal(err)
	}
}

// A manifest in the store that names paths outside the target, or writes
// through a symlink it makes, is refused by the agent before anything is
// written.
func TestRestoreRefusesHostileManifest(t *testing.T) {
	e := newSnapEnv(t, testConfig(t))
	ctx := context.Background()
	sum := sha256.Sum256([]byte("x"))
	file := func(p string) wire.SnapEntry {
		return wire.SnapEntry{Path: p, Type: "file", Mode: 0o644, Size: 1, Sums: sum[:], Sizes: []uint32{1}}
	}
	for _, tc := range []struct {
		name    string
		entries []wire.SnapEntry
	}{
		{"dot dot", []wire.SnapEntry{file("../escape")}},
		{"absolute", []wire.SnapEntry{file("/tmp/escape")}},
		{"symlink then write", []wire.SnapEntry{{Path: "l", Type: "symlink", Link: "."}, file("l/x")}},
		{"link out", []wire.SnapEntry{{Path: "l", Type: "symlink", Link: "../../.."}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := newSnapshotID(time.Now())
			if err := e.s.snaps.putManifest(ctx, "w1", id, tc.entries); err != nil {
				t.Fatal(err)
			}
			if err := e.s.snaps.put(ctx, "w1", &client.Snapshot{ID: id}); err != nil {
				t.Fatal(err)
			}
			_, err := e.cloud.RestoreSnapshot(ctx, id, client.RestoreSnapshotRequest{})
			if we := wire.AsError(err); err == nil || we.Code != wire.CodePermissionDenied || we.Reason != wire.ReasonUnsafeArchiveEntry {
				t.Fatalf("got %v, want permission_denied/unsafe_archive_entry", err)
			}
			if es, _ := os.ReadDir(e.cloudDir); len(es) != 0 {
				t.Fatalf("a refused restore wrote %v", es)
			}
		})
	}
}

// Snapshots live in JetStream: a control plane started again on the same
// state directory lists them and restores them.
func TestSnapshotsSurviveRestart(t *testing.T) {
	cfg := testConfig(t)
	s := startServer(t, cfg)
	ctx := context.Background()
	if _, err := adminClient(s).CreateWorkspace(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeMixedTree(t, dir)
	sn, err := realAgent(t, s, "w1", "laptop", dir).CreateSnapshot(ctx, client.CreateSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	s2 := startServer(t, cfg)
	snaps, err := adminClient(s2).ListSnapshots(ctx, "w1")
	if err != nil || len(snaps) != 1 || snaps[0].ID != sn.ID || snaps[0].Bytes != sn.Bytes {
		t.Fatalf("after a restart: %+v, %v", snaps, err)
	}
	dst := t.TempDir()
	res, err := realAgent(t, s2, "w1", "cloud", dst).RestoreSnapshot(ctx, sn.ID, client.RestoreSnapshotRequest{})
	if err != nil || res.TransferredBytes != sn.Bytes {
		t.Fatalf("restore after a restart: %+v, %v", res, err)
	}
	sameTree(t, dir, dst)
}
