package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/wire"
)

// bulkSize is a file large enough for bulk connections.
const bulkSize = 3*bulkMin + 12345

// roundTrip uploads data to name through tgt and downloads it again,
// checking the agent's hash and the bytes.
func roundTrip(t *testing.T, tgt *client.Target, name string, data []byte) {
	t.Helper()
	ctx := context.Background()
	want := sha256.Sum256(data)
	res, err := tgt.Put(ctx, name, bytes.NewReader(data), int64(len(data)), client.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.SHA256 != fmt.Sprintf("%x", want) || res.Size != int64(len(data)) {
		t.Fatalf("put = %+v, want sha %x", res, want)
	}
	f, err := tgt.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f.Body)
	f.Body.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("downloaded %d bytes (%v), want the %d uploaded", len(got), err, len(data))
	}
}

// TestBulkTransfers: a large upload and download each take a bulk
// connection, and arrive whole.
func TestBulkTransfers(t *testing.T) {
	e := newFilesEnv(t)
	before := e.s.bulk.claimed.Load()
	roundTrip(t, e.tgt, "big.bin", pseudoRandom(bulkSize, 5))
	if n := e.s.bulk.claimed.Load() - before; n != 2 {
		t.Fatalf("%d bulk connections, want 2 (the upload's and the download's)", n)
	}
	// A Range of the middle goes on a bulk connection too.
	ctx := context.Background()
	f, err := e.tgt.GetRange(ctx, "big.bin", bulkMin, bulkMin+100)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f.Body)
	f.Body.Close()
	if want := pseudoRandom(bulkSize, 5)[bulkMin : 2*bulkMin+100]; err != nil || !bytes.Equal(got, want) {
		t.Fatalf("range: %d bytes (%v), want %d", len(got), err, len(want))
	}
	if n := e.s.bulk.claimed.Load() - before; n != 3 {
		t.Fatalf("%d bulk connections, want 3", n)
	}
	if tmp := tempNames(t, e.root); len(tmp) > 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
}

// TestBulkFallsBackToNATS: an agent that cannot reach the control plane's
// URL still moves large files, in chunks over NATS.
func TestBulkFallsBackToNATS(t *testing.T) {
	s := startServer(t, testConfig(t))
	if _, err := adminClient(s).CreateWorkspace(context.Background(), "w1"); err != nil {
		t.Fatal(err)
	}
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String()
	dead.Close() // connections refused
	ta := enrollAgent(t, s, "w1", "a1")
	root := t.TempDir()
	ident := &enroll.Config{URL: deadURL, Workspace: ta.ag.Workspace, Agent: ta.ag.ID, NATSURLs: ta.urls, JWT: ta.jwt, Seed: string(ta.seed)}
	runAgent(t, s, ident, root)
	roundTrip(t, adminClient(s).Agent("w1", "a1"), "big.bin", pseudoRandom(bulkSize, 6))
	if n := s.bulk.claimed.Load(); n != 0 {
		t.Fatalf("%d bulk connections to an agent that cannot make one", n)
	}
}

// dialBulk makes a bulk upgrade request to s with ticket and signature
// headers (omitted when empty) and returns the status and the connection.
func dialBulk(t *testing.T, s *Server, ticket, sig string) (int, net.Conn) {
	t.Helper()
	code, conn, err := tryBulk(s, ticket, sig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return code, conn
}

// tryBulk is dialBulk for any goroutine.
func tryBulk(s *Server, ticket, sig string) (int, net.Conn, error) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
	if err != nil {
		return 0, nil, err
	}
	req := "GET " + wire.BulkPath + " HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: " + wire.BulkUpgrade + "\r\n"
	if ticket != "" {
		req += wire.BulkTicketHeader + ": " + ticket + "\r\n"
	}
	if sig != "" {
		req += wire.BulkSignatureHeader + ": " + sig + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		conn.Close()
		return 0, nil, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		conn.Close()
		return 0, nil, err
	}
	resp.Body.Close()
	_ = conn.SetReadDeadline(time.Time{})
	return resp.StatusCode, conn, nil
}

// signBulk signs ticket for ws/id with seed, as an agent does.
func signBulk(t *testing.T, seed []byte, ws, id, ticket string) string {
	t.Helper()
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := kp.Sign(wire.BulkSigned(ws, id, ticket))
	if err != nil {
		t.Fatal(err)
	}
	return wire.EncodeBulkSignature(sig)
}

// TestBulkTicketIsItsAgentsOnly: a hostile agent (enrolled, with keys of
// its own) cannot take another agent's bulk connection, with or without
// its ticket; the ticket's own agent can, once.
func TestBulkTicketIsItsAgentsOnly(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	for _, ws := range []string{"w1", "w2"} {
		if _, err := adminClient(s).CreateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	victim := enrollAgent(t, s, "w1", "a1")
	hostile := enrollAgent(t, s, "w1", "a2")
	other := enrollAgent(t, s, "w2", "a1") // same id, another workspace
	ticket, wait, withdraw := s.bulk.expect(victim.ag, victim.pub)
	defer withdraw()

	refused := []struct{ name, ticket, sig string }{
		{"no ticket", "", signBulk(t, victim.seed, "w1", "a1", ticket)},
		{"no signature", ticket, ""},
		{"signature not base64url", ticket, "!!!"},
		{"unknown ticket", "bNOSUCHTICKET", signBulk(t, victim.seed, "w1", "a1", "bNOSUCHTICKET")},
		{"hostile agent's key, its own name", ticket, signBulk(t, hostile.seed, "w1", "a2", ticket)},
		{"hostile agent's key, the victim's name", ticket, signBulk(t, hostile.seed, "w1", "a1", ticket)},
		{"same id in another workspace", ticket, signBulk(t, other.seed, "w1", "a1", ticket)},
		{"victim's key over another ticket", ticket, signBulk(t, victim.seed, "w1", "a1", ticket+"x")},
		{"victim's key, another agent's name", ticket, signBulk(t, victim.seed, "w1", "a2", ticket)},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			if code, _ := dialBulk(t, s, tc.ticket, tc.sig); code != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", code)
			}
			select {
			case <-wait.conn:
				t.Fatal("a refused connection reached the transfer")
			default:
			}
		})
	}
	code, conn := dialBulk(t, s, ticket, signBulk(t, victim.seed, "w1", "a1", ticket))
	if code != http.StatusSwitchingProtocols {
		t.Fatalf("the ticket's agent got %d, want 101", code)
	}
	select {
	case c := <-wait.conn:
		// The transfer has the agent's connection: bytes go through.
		go io.WriteString(conn, "hello")
		b := make([]byte, 5)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "hello" {
			t.Fatalf("read %q, %v", b, err)
		}
		c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the claimed connection never reached the transfer")
	}
	if code, _ := dialBulk(t, s, ticket, signBulk(t, victim.seed, "w1", "a1", ticket)); code != http.StatusUnauthorized {
		t.Fatalf("a used ticket replayed: %d, want 401", code)
	}
	if code, _ := dialBulk(t, s, "", ""); code != http.StatusBadRequest && code != http.StatusUnauthorized {
		t.Fatalf("no ticket at all: %d", code)
	}
}

// TestBulkDownloadCutResumesOverNATS: an agent whose bulk connection ends
// halfway (and one that sends more than asked) still gives the client
// exactly the file: the rest comes with fs.read.
func TestBulkDownloadCutResumesOverNATS(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  func(n int64) int64 // bytes the agent sends of n asked
		tail []byte              // and then
	}{
		{"half", func(n int64) int64 { return n / 2 }, nil},
		{"nothing", func(int64) int64 { return 0 }, nil},
		{"more than asked", func(n int64) int64 { return n }, []byte("garbage past the end")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, testConfig(t))
			if _, err := adminClient(s).CreateWorkspace(context.Background(), "w1"); err != nil {
				t.Fatal(err)
			}
			ta := enrollAgent(t, s, "w1", "a1")
			m, _ := serveMock(t, ta)
			data := pseudoRandom(bulkSize, 9)
			m.HandleReadFile(func(string) ([]byte, error) { return data, nil })
			sent := make(chan error, 1)
			sig := func(tk string) string {
				kp, _ := nkeys.FromSeed(ta.seed)
				b, _ := kp.Sign(wire.BulkSigned("w1", "a1", tk))
				return wire.EncodeBulkSignature(b)
			}
			agenttest.On(m, wire.OpFsSend, func(req *wire.FsSendRequest) (*struct{}, error) {
				code, conn, err := tryBulk(s, req.Ticket, sig(req.Ticket))
				if err != nil || code != http.StatusSwitchingProtocols {
					return nil, fmt.Errorf("bulk: %d, %v", code, err)
				}
				n := tc.cut(req.Length)
				go func() {
					_, err := conn.Write(append(data[req.Offset:req.Offset+n:req.Offset+n], tc.tail...))
					conn.Close()
					sent <- err
				}()
				return &struct{}{}, nil
			})
			f, err := adminClient(s).Agent("w1", "a1").Get(context.Background(), "big.bin")
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(f.Body)
			f.Body.Close()
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("downloaded %d bytes (%v), want the file's %d", len(got), err, len(data))
			}
			if err := <-sent; err != nil && tc.tail == nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBulkDownloadRidesOutAgentReconnect: the agent's NATS connection drops
// and comes back in the middle of a large download; the download goes on,
// on its bulk connection, and arrives whole.
func TestBulkDownloadRidesOutAgentReconnect(t *testing.T) {
	e := newFilesEnv(t)
	ctx := context.Background()
	data := pseudoRandom(bulkSize, 11)
	if _, err := e.tgt.Put(ctx, "big.bin", bytes.NewReader(data), int64(len(data)), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	f, err := e.tgt.Get(ctx, "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Body.Close()
	// The client reads slowly, so that the rest waits on the agent.
	head := make([]byte, bulkMin)
	if _, err := io.ReadFull(f.Body, head); err != nil {
		t.Fatal(err)
	}
	agentConn := func() (cids []uint64) {
		connz, err := e.s.ns.Connz(&server.ConnzOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range connz.Conns {
			if strings.HasPrefix(c.Name, "outpost-agent ") {
				cids = append(cids, c.Cid)
			}
		}
		return cids
	}
	old := agentConn()
	if len(old) != 1 {
		t.Fatalf("%d agent connections, want 1", len(old))
	}
	if err := e.s.ns.DisconnectClientByID(old[0]); err != nil {
		t.Fatal(err)
	}
	// The agent notices and reconnects, and says hello again.
	waitFor(t, waitLong, "the agent's new connection", func() bool {
		now := agentConn()
		return len(now) == 1 && now[0] != old[0]
	})
	waitFor(t, waitLong, "the agent online", func() bool {
		ag, err := adminClient(e.s).GetAgent(ctx, "w1", "a1")
		return err == nil && ag.Status == "online"
	})
	rest, err := io.ReadAll(f.Body)
	if err != nil {
		t.Fatalf("download cut after %d bytes: %v", len(head)+len(rest), err)
	}
	if got := append(head, rest...); !bytes.Equal(got, data) {
		t.Fatalf("downloaded %d bytes, not the file's %d", len(got), len(data))
	}
}
