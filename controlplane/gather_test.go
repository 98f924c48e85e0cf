package controlplane

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
)

// Over TLS, where the API's connections gather their records, an upload,
// a download, a range and a process's output stream arrive whole.
func TestTransfersOverTLS(t *testing.T) {
	w := startTLSWorld(t, true)
	ctx := context.Background()
	tgt := w.cl.Agent("ws1", "laptop")
	data := pseudoRandom(3*defaultChunk+12345, 21)
	res, err := tgt.Put(ctx, "big.bin", bytes.NewReader(data), int64(len(data)), client.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); res.Size != int64(len(data)) || res.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("put: %+v", res)
	}
	f, err := tgt.Get(ctx, "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f.Body)
	f.Body.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("download: %d bytes of %d, %v", len(got), len(data), err)
	}
	f, err = tgt.GetRange(ctx, "big.bin", defaultChunk-5, defaultChunk+10)
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(f.Body)
	f.Body.Close()
	if err != nil || !bytes.Equal(got, data[defaultChunk-5:2*defaultChunk+5]) {
		t.Fatalf("range: %d bytes, %v", len(got), err)
	}

	const lines = 200000 // about 5 MB of output
	p, err := tgt.StartProcess(ctx, client.StartProcessRequest{Command: "seq -f '%023.0f' 1 200000"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var exited bool
	err = tgt.Events(ctx, p.ID, 0, func(ev client.ProcessEvent) error {
		switch {
		case ev.Chunk != nil:
			out.Write(ev.Chunk.Data)
		case ev.Kind == client.EventExit:
			exited = true
		case ev.Kind == client.EventClosed:
			return io.EOF
		}
		return nil
	})
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if !exited || out.Len() != lines*24 {
		t.Fatalf("stream: exited %v, %d bytes, want %d", exited, out.Len(), lines*24)
	}
}
