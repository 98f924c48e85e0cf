package outposttest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/outposttest"
	"github.com/outposthq/outpost/wire"
)

// A file larger than one chunk goes up and comes back through the mock's
// whole-file handlers: the test never sees the chunk ops the control plane
// speaks, and the bytes are the same.
func TestFilesMoveInChunksThroughWholeFileHandlers(t *testing.T) {
	env := outposttest.New(t, outposttest.Config{})
	var (
		mu    sync.Mutex
		files = map[string][]byte{}
	)
	env.Agent.HandleWriteFile(func(path string, data []byte) error {
		mu.Lock()
		defer mu.Unlock()
		files[path] = data
		return nil
	})
	env.Agent.HandleReadFile(func(path string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		data, ok := files[path]
		if !ok {
			return nil, wire.Errorf(wire.CodeNotFound, "", "no %s", path)
		}
		return data, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	want := make([]byte, 2*wire.MaxChunk+12345) // more than one chunk of any size the control plane picks
	_, _ = rand.Read(want)
	wr, err := env.Target.Put(ctx, "big.bin", bytes.NewReader(want), int64(len(want)), client.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if wr.Size != int64(len(want)) {
		t.Fatalf("put size %d, want %d", wr.Size, len(want))
	}
	if n := env.Agent.Count(wire.OpFsUploadChunk); n < 2 {
		t.Fatalf("%d upload chunks: the test did not exercise the chunked upload", n)
	}
	f, err := env.Target.Get(ctx, "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f.Body)
	f.Body.Close()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes (%v), want the %d put", len(got), err, len(want))
	}
	if n := env.Agent.Count(wire.OpFsRead); n < 1 {
		t.Fatalf("%d ranged reads: the test did not exercise the chunked download", n)
	}
}

// On gives a typed handler for any one-message op; the mock validates the
// body as a real agent does before the handler sees it.
func TestOnValidatesAndAnswersTyped(t *testing.T) {
	env := outposttest.New(t, outposttest.Config{})
	agenttest.On(env.Agent, wire.OpGitStatus, func(req *wire.GitStatusRequest) (*wire.GitStatus, error) {
		return &wire.GitStatus{IsRepo: req.Path == "repo", Branch: wire.GitBranch{Head: "main"},
			Entries: []wire.GitStatusEntry{{Path: "a.go", Index: ".", Worktree: "M", Kind: "changed"}}}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := env.Target.GitStatus(ctx, "repo")
	if err != nil || !st.IsRepo || st.Branch.Head != "main" || len(st.Entries) != 1 || st.Entries[0].Path != "a.go" {
		t.Fatalf("status %+v, %v", st, err)
	}
	_, err = env.Target.GitLog(ctx, "repo", wire.MaxGitLog+1)
	if wire.AsError(err).Code != wire.CodeInvalidArgument {
		t.Fatalf("log of too many commits: %v, want invalid_argument", err)
	}
	if n := env.Agent.Count(wire.OpGitLog); n != 0 {
		t.Fatalf("the control plane sent %d invalid git.log requests; want it to refuse them itself", n)
	}
}
