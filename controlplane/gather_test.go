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
	"github.com/outposthq/outpost/wire"
)

// Over TLS, where the API's connections gather their records, an upload,
// a download, a range and a process's output stream arrive whole. On a
// starved machine (-race, several packages at once) the agent's link can be
// declared stale mid-transfer; the test then resumes as API.md tells clients
// to (a new PUT, a Range from what arrived, Last-Event-ID), at most
// maxResumes times, and logs each, so the bytes are still checked whole.
func TestTransfersOverTLS(t *testing.T) {
	w := startTLSWorld(t, true)
	ctx := context.Background()
	tgt := w.cl.Agent("ws1", "laptop")
	data := pseudoRandom(3*defaultChunk+12345, 21)
	var res *client.WriteResult
	err := resuming(t, "upload", func() (err error) {
		res, err = tgt.Put(ctx, "big.bin", bytes.NewReader(data), int64(len(data)), client.PutOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); res.Size != int64(len(data)) || res.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("put: %+v", res)
	}
	var got []byte
	err = resuming(t, "download", func() error {
		f, err := tgt.GetRange(ctx, "big.bin", int64(len(got)), int64(len(data)-len(got)))
		if err != nil {
			return err
		}
		defer f.Body.Close()
		b, err := io.ReadAll(f.Body)
		got = append(got, b...)
		return err
	})
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("download: %d bytes of %d, %v", len(got), len(data), err)
	}
	f, err := tgt.GetRange(ctx, "big.bin", defaultChunk-5, defaultChunk+10)
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
	var last uint64
	err = resuming(t, "stream", func() error {
		err := tgt.Events(ctx, p.ID, last, func(ev client.ProcessEvent) error {
			last = ev.Seq
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
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !exited || out.Len() != lines*24 {
		t.Fatalf("stream: exited %v, %d bytes, want %d", exited, out.Len(), lines*24)
	}
}

// maxResumes bounds how often TestTransfersOverTLS resumes one transfer.
const maxResumes = 2

// resuming runs f until it succeeds, resuming after an error the API calls
// retryable (503: the agent is reconnecting) or a body cut short, at most
// maxResumes times.
func resuming(t *testing.T, what string, f func() error) error {
	t.Helper()
	for i := 0; ; i++ {
		err := f()
		retry := errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, &wire.Error{Code: wire.CodeUnavailable})
		if err == nil || !retry || i == maxResumes {
			return err
		}
		t.Logf("%s: resuming after %v", what, err)
	}
}
