package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
)

// TestUploadCutMidBody sends a PUT that promises more bytes than it sends,
// at several points of a chunked upload, and checks that the old file
// stays whole and no temporary file is left.
func TestUploadCutMidBody(t *testing.T) {
	e := newFilesEnv(t)
	old := filepath.Join(e.root, "keep.txt")
	writeFile(t, old, "old content", 0o640)
	for _, sent := range []int{0, 100, defaultChunk - 1, defaultChunk + 1, 3*defaultChunk + 17} {
		t.Run(fmt.Sprint(sent), func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(e.s.URL(), "http://"))
			if err != nil {
				t.Fatal(err)
			}
			promised := 8 * defaultChunk
			fmt.Fprintf(conn, "PUT %s/fs/file?path=keep.txt HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n",
				e.path, e.s.AdminToken(), promised)
			if _, err := conn.Write(pseudoRandom(sent, 7)); err != nil {
				t.Fatal(err)
			}
			// Half-close: the server reads EOF before Content-Length.
			conn.(*net.TCPConn).CloseWrite()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode < 400 {
					t.Fatalf("a cut upload answered %d", resp.StatusCode)
				}
			}
			conn.Close()
			waitFor(t, waitLong, "temporary files removed", func() bool { return len(tempNames(t, e.root)) == 0 })
			b, err := os.ReadFile(old)
			if err != nil || string(b) != "old content" {
				t.Fatalf("old file now %q, %v", b, err)
			}
			if fi, _ := os.Stat(old); fi.Mode().Perm() != 0o640 {
				t.Fatalf("mode now %v", fi.Mode())
			}
		})
	}
}

// TestLargeFileRoundTrip uploads and downloads a file of many chunks through
// the HTTP API and compares SHA-256 on both sides; no temporary file stays.
func TestLargeFileRoundTrip(t *testing.T) {
	e := newFilesEnv(t)
	ctx := context.Background()
	size := 16*defaultChunk + 4321
	data := pseudoRandom(size, 42)
	want := sha256.Sum256(data)
	res, err := e.tgt.Put(ctx, "big/file.bin", bytes.NewReader(data), int64(size), client.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.SHA256 != hex.EncodeToString(want[:]) || res.Size != int64(size) {
		t.Fatalf("put = %+v, want sha %x", res, want)
	}
	onDisk, err := os.ReadFile(filepath.Join(e.root, "big", "file.bin"))
	if err != nil || sha256.Sum256(onDisk) != want {
		t.Fatalf("file on disk differs (%d bytes, %v)", len(onDisk), err)
	}
	// Unknown length: chunked transfer encoding.
	if _, err := e.tgt.Put(ctx, "big/stream.bin", io.MultiReader(bytes.NewReader(data)), -1, client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"big/file.bin", "big/stream.bin"} {
		f, err := e.tgt.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, f.Body)
		f.Body.Close()
		if err != nil || n != int64(size) || !bytes.Equal(h.Sum(nil), want[:]) {
			t.Fatalf("%s: downloaded %d bytes (%v), sha %x, want %x", name, n, err, h.Sum(nil), want)
		}
	}
	if tmp := tempNames(t, e.root); len(tmp) > 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
}

// TestDownloadIsOneVersion replaces a file while it is being downloaded:
// the download is the old content or the new, never a mix.
func TestDownloadIsOneVersion(t *testing.T) {
	e := newFilesEnv(t)
	ctx := context.Background()
	size := 12 * defaultChunk
	v1, v2 := pseudoRandom(size, 1), pseudoRandom(size, 2)
	if _, err := e.tgt.Put(ctx, "f.bin", bytes.NewReader(v1), int64(size), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	f, err := e.tgt.Get(ctx, "f.bin")
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, defaultChunk)
	if _, err := io.ReadFull(f.Body, head); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tgt.Put(ctx, "f.bin", bytes.NewReader(v2), int64(size), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(f.Body)
	f.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := append(head, rest...); !bytes.Equal(got, v1) {
		t.Fatalf("download mixed versions (%d bytes)", len(got))
	}
}

// TestFilesThroughSession checks that file calls route through a session
// and carry its headers.
func TestFilesThroughSession(t *testing.T) {
	e := newFilesEnv(t)
	ctx := context.Background()
	cl := adminClient(e.s)
	if _, err := cl.CreateSession(ctx, "w1", client.CreateSessionRequest{ID: "s1",
		Backends: map[string]client.SessionBackend{"laptop": {Kind: "agent", Agent: "a1"}}, Active: "laptop"}); err != nil {
		t.Fatal(err)
	}
	data := pseudoRandom(3*defaultChunk, 3)
	sess := cl.Session("w1", "s1")
	if _, err := sess.Put(ctx, "s.bin", bytes.NewReader(data), int64(len(data)), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", e.s.URL()+"/v1/workspaces/w1/sessions/s1/fs/file?path="+url.QueryEscape("s.bin"), nil)
	req.Header.Set("Authorization", "Bearer "+e.s.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, data) {
		t.Fatalf("session download: %d, %d bytes", resp.StatusCode, len(got))
	}
	if resp.Header.Get(HeaderBackend) != "laptop" || resp.Header.Get(HeaderEpoch) == "" {
		t.Fatalf("headers %v", resp.Header)
	}
}

// TestLargePutWithIdempotencyKey: a request's Idempotency-Key names the
// PUT, not each of its chunks.
func TestLargePutWithIdempotencyKey(t *testing.T) {
	e := newFilesEnv(t)
	data := pseudoRandom(5*defaultChunk+3, 9)
	req, _ := http.NewRequest("PUT", e.s.URL()+e.path+"/fs/file?path=k.bin", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+e.s.AdminToken())
	req.Header.Set(client.HeaderIdempotencyKey, "put-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	got, err := os.ReadFile(filepath.Join(e.root, "k.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file differs (%d bytes, %v)", len(got), err)
	}
}
