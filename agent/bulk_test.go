package agent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/wire"
)

// fakeBulkEnd is a control plane's bulk endpoint for one connection: it
// checks the upgrade's ticket and signature against pub, answers 101 and
// runs serve on the connection.
func fakeBulkEnd(t *testing.T, pub, ticket string, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil || req.URL.Path != wire.BulkPath || req.Header.Get("Upgrade") != wire.BulkUpgrade {
			fmt.Fprint(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			return
		}
		auth, err := wire.ParseBulkAuth(req.Header.Get(wire.BulkTicketHeader), req.Header.Get(wire.BulkSignatureHeader))
		kp, _ := nkeys.FromPublicKey(pub)
		if err != nil || auth.Ticket != ticket || kp.Verify(wire.BulkSigned("w1", "a1", ticket), auth.Signature) != nil {
			fmt.Fprint(c, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
			return
		}
		fmt.Fprint(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+wire.BulkUpgrade+"\r\n\r\n")
		serve(c)
	}()
	return "http://" + ln.Addr().String()
}

// bulkOps is a fileOps over root whose bulk connections go to url, with a
// fresh key; it returns the public key.
func bulkOps(t *testing.T, root, url string) (*fileOps, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	f, err := files.New(root)
	if err != nil {
		t.Fatal(err)
	}
	fo := &fileOps{fs: f, transfers: newTransfers(time.Minute),
		bulk: newBulkDialer(&enroll.Config{URL: url, Workspace: "w1", Agent: "a1", Seed: string(seed)}, nil)}
	t.Cleanup(func() { fo.transfers.close(); f.Close() })
	return fo, pub
}

func call(t *testing.T, op string, body any) *wire.Request {
	t.Helper()
	r, err := wire.NewRequest(op, body, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestBulkSendAndRecv: fs.send streams exactly the range asked for to the
// control plane's endpoint; fs.upload.recv writes what comes, and the
// commit waits for it and checks it; a cut is checksum_mismatch.
func TestBulkSendAndRecv(t *testing.T) {
	root := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16+3) // 1 MiB and a bit
	if err := os.WriteFile(filepath.Join(root, "f.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("send", func(t *testing.T) {
		got := make(chan []byte, 1)
		fo, pub := bulkOps(t, root, "http://127.0.0.1:1")
		fo.bulk.base.Host = hostOf(fakeBulkEnd(t, pub, "bT1", func(c net.Conn) {
			b, _ := io.ReadAll(c)
			got <- b
		}))
		open, err := fo.open(ctx, call(t, wire.OpFsOpen, &wire.FsOpenRequest{Path: "f.bin", Length: 10}))
		if err != nil {
			t.Fatal(err)
		}
		h := open.(*wire.FsOpenResult).Handle
		if _, err := fo.send(ctx, call(t, wire.OpFsSend, &wire.FsSendRequest{Handle: h, Offset: 1000, Length: 500000, Ticket: "bT1"})); err != nil {
			t.Fatal(err)
		}
		select {
		case b := <-got:
			if !bytes.Equal(b, data[1000:501000]) {
				t.Fatalf("sent %d bytes, not the range's 500000", len(b))
			}
		case <-time.After(20 * time.Second):
			t.Fatal("nothing sent")
		}
		// Not a download, not a ticket the endpoint issued.
		if _, err := fo.send(ctx, call(t, wire.OpFsSend, &wire.FsSendRequest{Handle: "nope", Length: 1, Ticket: "bT1"})); wire.AsError(err).Code != wire.CodeNotFound {
			t.Fatalf("unknown handle: %v", err)
		}
	})

	t.Run("refused", func(t *testing.T) {
		fo, _ := bulkOps(t, root, "http://127.0.0.1:1")
		other, _ := nkeys.CreateUser()
		otherPub, _ := other.PublicKey()
		// The endpoint expects another key: the agent is refused, and says so.
		fo.bulk.base.Host = hostOf(fakeBulkEnd(t, otherPub, "bT2", func(net.Conn) { t.Error("a refused agent got through") }))
		open, err := fo.open(ctx, call(t, wire.OpFsOpen, &wire.FsOpenRequest{Path: "f.bin", Length: 10}))
		if err != nil {
			t.Fatal(err)
		}
		h := open.(*wire.FsOpenResult).Handle
		_, err = fo.send(ctx, call(t, wire.OpFsSend, &wire.FsSendRequest{Handle: h, Length: 100, Ticket: "bT2"}))
		if wire.AsError(err).Code != wire.CodeUnavailable {
			t.Fatalf("refused: %v, want unavailable", err)
		}
	})

	crc := crc32.Checksum(data, castagnoli)
	wrong := crc + 1
	for _, tc := range []struct {
		name string
		cut  bool
		crc  *uint32 // else the SHA-256
		ok   bool
	}{
		{"whole, sha256", false, nil, true},
		{"cut, sha256", true, nil, false},
		{"whole, crc32c", false, &crc, true},
		{"whole, wrong crc32c", false, &wrong, false},
		{"cut, crc32c", true, &crc, false},
	} {
		t.Run("recv "+tc.name, func(t *testing.T) {
			fo, pub := bulkOps(t, root, "http://127.0.0.1:1")
			name := strings.NewReplacer(" ", "", ",", "-").Replace(tc.name) + ".bin"
			sendN := len(data)
			if tc.cut {
				sendN = len(data) / 3
			}
			fo.bulk.base.Host = hostOf(fakeBulkEnd(t, pub, "bT3", func(c net.Conn) {
				c.Write(data[:sendN])
				c.(*net.TCPConn).CloseWrite()
			}))
			begun, err := fo.uploadBegin(ctx, call(t, wire.OpFsUploadBegin, &wire.FsUploadBeginRequest{FsWriteOptions: wire.FsWriteOptions{Path: name}}))
			if err != nil {
				t.Fatal(err)
			}
			h := begun.(*wire.FsUploadBeginResult).Handle
			if _, err := fo.recv(ctx, call(t, wire.OpFsUploadRecv, &wire.FsUploadRecvRequest{Handle: h, Ticket: "bT3"})); err != nil {
				t.Fatal(err)
			}
			commit := &wire.FsUploadCommitRequest{Handle: h, Size: int64(len(data)), CRC32C: tc.crc}
			if tc.crc == nil {
				sum := sha256.Sum256(data)
				commit.SHA256 = hex.EncodeToString(sum[:])
			}
			res, err := fo.uploadCommit(ctx, call(t, wire.OpFsUploadCommit, commit))
			if !tc.ok {
				if wireError(err).Reason != wire.ReasonChecksumMismatch {
					t.Fatalf("a bad upload committed: %v, %v", res, err)
				}
				if _, err := os.Stat(filepath.Join(root, name)); !os.IsNotExist(err) {
					t.Fatalf("a bad upload left %s: %v", name, err)
				}
				if tmp := tempFiles(t, root); len(tmp) > 0 {
					t.Fatalf("temporary files left: %v", tmp)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(data); res.(*wire.FsWriteResult).SHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("the agent's sha256 is %s", res.(*wire.FsWriteResult).SHA256)
			}
			b, err := os.ReadFile(filepath.Join(root, name))
			if err != nil || !bytes.Equal(b, data) {
				t.Fatalf("%s has %d bytes (%v)", name, len(b), err)
			}
		})
	}

	t.Run("close stops a job", func(t *testing.T) {
		fo, pub := bulkOps(t, root, "http://127.0.0.1:1")
		stall := make(chan struct{})
		defer close(stall)
		fo.bulk.base.Host = hostOf(fakeBulkEnd(t, pub, "bT4", func(net.Conn) { <-stall })) // never reads: the agent's writes block
		big := bytes.Repeat([]byte{7}, 64<<20)
		if err := os.WriteFile(filepath.Join(root, "big.bin"), big, 0o644); err != nil {
			t.Fatal(err)
		}
		open, err := fo.open(ctx, call(t, wire.OpFsOpen, &wire.FsOpenRequest{Path: "big.bin"}))
		if err != nil {
			t.Fatal(err)
		}
		h := open.(*wire.FsOpenResult).Handle
		if _, err := fo.send(ctx, call(t, wire.OpFsSend, &wire.FsSendRequest{Handle: h, Length: int64(len(big)), Ticket: "bT4"})); err != nil {
			t.Fatal(err)
		}
		if _, err := fo.send(ctx, call(t, wire.OpFsSend, &wire.FsSendRequest{Handle: h, Length: 1, Ticket: "bT4"})); err == nil {
			t.Fatal("a second bulk connection on a busy handle")
		}
		closed := make(chan error, 1)
		go func() {
			_, err := fo.closeHandle(ctx, call(t, wire.OpFsClose, &wire.FsHandleRequest{Handle: h}))
			closed <- err
		}()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("fs.close did not stop the blocked bulk job")
		}
	})
}

// hostOf is the host:port of an http:// URL.
func hostOf(u string) string { return u[len("http://"):] }
