package agent

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/wire"
)

// archiveCall runs one archive op handler with body, as the agent's
// dispatcher would (the body encoded and decoded on the way).
func archiveCall(t *testing.T, h Handler, op string, body any) (any, error) {
	t.Helper()
	req, err := wire.NewRequest(op, nil, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeRequest(req, body)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := wire.DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	return h(context.Background(), dec)
}

// manyFilesTar is a tar of n files f0000..f(n-1) of size bytes each, in
// directories of 50, with bad (when set) in place of file n/2.
func manyFilesTar(t *testing.T, n, size int, bad string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i := range n {
		name := fmt.Sprintf("d%02d/f%04d", i/50, i)
		if i == n/2 && bad != "" {
			name = bad
		}
		content := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o640, Typeflag: tar.TypeReg, Size: int64(size)}); err != nil {
			t.Fatal(err)
		}
		tw.Write(content)
	}
	tw.Close()
	return b.Bytes()
}

// unpackChunks begins an unpack into dest and sends data in chunks of
// size, in the order order gives (indexes of chunks), then commits.
func unpackChunks(t *testing.T, as *archives, dest string, data []byte, size int, order []int) (*wire.FsUnpackResult, error) {
	t.Helper()
	r, err := archiveCall(t, as.begin, wire.OpFsUnpackBegin, &wire.FsUnpackBeginRequest{Path: dest})
	if err != nil {
		t.Fatal(err)
	}
	begun := r.(*wire.FsArchiveOpenResult)
	if begun.Window != unpackWindow {
		t.Errorf("begin gave window %d, want %d", begun.Window, unpackWindow)
	}
	for _, i := range order {
		chunk := data[i*size : min(len(data), (i+1)*size)]
		req := &wire.FsUnpackChunkRequest{Handle: begun.Handle, Offset: int64(i * size), Data: chunk}
		if _, err := archiveCall(t, as.chunk, wire.OpFsUnpackChunk, req); err != nil {
			archiveCall(t, as.closeArchive, wire.OpFsUnpackAbort, &wire.FsHandleRequest{Handle: begun.Handle})
			return nil, err
		}
	}
	res, err := archiveCall(t, as.commit, wire.OpFsUnpackCommit, &wire.FsHandleRequest{Handle: begun.Handle})
	if err != nil {
		return nil, err
	}
	return res.(*wire.FsUnpackResult), nil
}

func newTestArchives(t *testing.T) (*archives, string) {
	t.Helper()
	root := t.TempDir()
	f, err := files.New(root)
	if err != nil {
		t.Fatal(err)
	}
	as := &archives{fs: f, open: map[string]*archiveJob{}}
	t.Cleanup(func() { as.close(); f.Close() })
	return as, root
}

// TestUnpackChunksOutOfOrder: chunks sent out of order within the window
// (as the control plane's concurrent calls may arrive) unpack as the
// stream in order.
func TestUnpackChunksOutOfOrder(t *testing.T) {
	as, root := newTestArchives(t)
	data := manyFilesTar(t, 400, 1000, "")
	const size = 32 << 10
	nch := (len(data) + size - 1) / size
	// Pairs swapped, and the last few chunks reversed.
	var order []int
	m := (nch - 4) &^ 1
	for i := 0; i < m; i += 2 {
		order = append(order, i+1, i)
	}
	for i := nch - 1; i >= m; i-- {
		order = append(order, i)
	}
	if len(order) != nch {
		t.Fatalf("order covers %d of %d chunks", len(order), nch)
	}
	res, err := unpackChunks(t, as, "out", data, size, order)
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 400 || res.Dirs != 0 || res.Bytes != 400*1000 {
		t.Errorf("result %+v", res)
	}
	for i := range 400 {
		b, err := os.ReadFile(filepath.Join(root, "out", fmt.Sprintf("d%02d/f%04d", i/50, i)))
		if err != nil || !bytes.Equal(b, bytes.Repeat([]byte{byte('a' + i%26)}, 1000)) {
			t.Fatalf("file %d: %d bytes, %v", i, len(b), err)
		}
	}
	// A chunk sent twice, and a commit with a chunk missing, are refused.
	if _, err := unpackChunks(t, as, "dup", data, size, []int{0, 1, 1}); err == nil || !strings.Contains(err.Error(), "sent already") {
		t.Errorf("duplicate chunk: %v", err)
	}
	if _, err := unpackChunks(t, as, "gap", data, size, []int{0, 2}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("commit with a gap: %v", err)
	}
}

// TestUnpackPipelinedBadEntry: a tar of many files with an unsafe entry in
// the middle, sent in small chunks: the entries before it land whole, the
// bad one is refused and nothing after it is written, nothing appears
// outside the root, and no temporary file is left.
func TestUnpackPipelinedBadEntry(t *testing.T) {
	for _, bad := range []string{"../../escaped", "/abs/escaped", "d05/../../escaped"} {
		t.Run(bad, func(t *testing.T) {
			as, root := newTestArchives(t)
			const n = 600
			data := manyFilesTar(t, n, 3000, bad)
			const size = 16 << 10
			var order []int
			for i := 0; i*size < len(data); i++ {
				order = append(order, i)
			}
			_, err := unpackChunks(t, as, "dest", data, size, order)
			if !errors.Is(err, files.ErrUnsafeEntry) {
				t.Fatalf("unpack: %v, want an unsafe entry", err)
			}
			for i := range n {
				p := filepath.Join(root, "dest", fmt.Sprintf("d%02d/f%04d", i/50, i))
				b, err := os.ReadFile(p)
				switch {
				case i < n/2 && (err != nil || len(b) != 3000):
					t.Fatalf("file %d before the bad entry: %d bytes, %v", i, len(b), err)
				case i >= n/2 && err == nil:
					t.Fatalf("file %d, at or after the bad entry, was written", i)
				}
			}
			for _, p := range []string{filepath.Join(filepath.Dir(root), "escaped"), filepath.Join(filepath.Dir(filepath.Dir(root)), "escaped"), "/abs/escaped"} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was written outside the root", p)
				}
			}
			filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && strings.HasPrefix(d.Name(), files.TempPrefix) {
					t.Errorf("temporary file left: %s", p)
				}
				return nil
			})
		})
	}
}
