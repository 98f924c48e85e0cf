package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/outposthq/outpost/agent/files"
)

// putChunks on two goroutines with chunks of the same files in both of
// its PutAlls at once (files of many chunks, and chunks two files share,
// one of them twice in the batch) restores every file exactly: writes of
// one file from both goroutines, its completion and its rename do not
// race (run with -race).
func TestPutChunksSameFileOnBothWorkers(t *testing.T) {
	defer func(n int) { putWorkers = n }(putWorkers)
	putWorkers = 2
	const chunks, size = 300, 100
	var entries []files.SnapEntry
	var sums []files.Sum
	var sizes []uint32
	var data []byte
	want := map[string][]byte{}
	for fi, name := range []string{"a", "b", "c"} {
		e := files.SnapEntry{Path: name, Type: files.TypeFile, Mode: 0o644}
		for i := range chunks {
			// b's every third chunk is a's.
			src := fi
			if fi == 1 && i%3 == 0 {
				src = 0
			}
			b := []byte(fmt.Sprintf("%0*d", size, src*chunks+i))
			s := sha256.Sum256(b)
			e.Chunks = append(e.Chunks, files.Chunk{Sum: s, Size: size})
			e.Size += size
			want[name] = append(want[name], b...)
			if src == fi {
				sums = append(sums, s)
				sizes = append(sizes, size)
				data = append(data, b...)
			}
		}
		entries = append(entries, e)
	}
	// One chunk twice in the batch, far apart (other PutAlls).
	sums, sizes, data = append(sums, sums[0]), append(sizes, sizes[0]), append(data, data[:size]...)
	for round := range 5 {
		dst := t.TempDir()
		df, err := files.New(dst)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		r, err := df.BeginRestore(ctx, ".", entries, files.RestoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := putChunks(ctx, r.PutAll, sums, sizes, data); err != nil {
			t.Fatal(err)
		}
		res, err := r.Commit(ctx)
		if err != nil || res.Written != len(entries) {
			t.Fatalf("round %d: commit %+v, %v; want %d written", round, res, err, len(entries))
		}
		for name, w := range want {
			if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || !bytes.Equal(got, w) {
				t.Errorf("round %d: %s: %d bytes, %v; not the manifest's", round, name, len(got), err)
			}
		}
		df.Close()
	}
}
