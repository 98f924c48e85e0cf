// The control plane's side of bulk connections (wire.BulkPath): a large
// transfer's bytes go straight between the agent and the control plane on
// a connection of their own, not through the NATS server in chunks. NATS
// keeps the control (the ticket goes out in fs.send or fs.upload.recv on the
// agent's own subject) and is the fallback. wire/PROTOCOL.md, "Transfers,
// step by step", describes both sides; agent/bulk.go is the other.

package controlplane

import (
	"context"
	"crypto/rand"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// bulkMin is the least a download or upload moves on a bulk connection:
// below it, the chunks over NATS cost less than a new connection.
const bulkMin = 8 << 20

// bulkArrive bounds how long a transfer waits for its bulk connection after
// the agent said it made it.
const bulkArrive = 5 * time.Second

// bulkIdle bounds one read or write of a bulk connection.
const bulkIdle = 30 * time.Second

// bulkSide is what a relay needs for bulk connections: the server's
// tickets and its agent records (for the keys the tickets are bound to).
type bulkSide struct {
	s   *Server
	hub *bulkHub
}

// withBulk lets x move large transfers on bulk connections, with the
// agents of r's workspace.
func (x *fileRelay) withBulk(s *Server, r *http.Request) *fileRelay {
	x.bulk, x.ws, x.size = &bulkSide{s: s, hub: &s.bulk}, r.PathValue("ws"), r.ContentLength
	return x
}

// bulkHub holds the tickets of bulk connections not yet claimed.
type bulkHub struct {
	mu      sync.Mutex
	waits   map[string]*bulkWait
	claimed atomic.Int64 // connections taken (the tests count them)
	// issued, if set, is told each ticket as it is issued, before it goes
	// to the agent (tests try to take it).
	issued func(ticket string)
	// attached, if set, is told each attach stream's bulk connection as
	// the stream takes it (tests cut it).
	attached func(net.Conn)
	// pulled, if set, is told each snapshot batch's bulk connection as
	// the pull takes it (tests cut it).
	pulled func(net.Conn)
}

// bulkWait is one ticket: the agent that may claim it, by its bound public
// key, and where its connection goes.
type bulkWait struct {
	ag  subjects.Agent
	pub string

	mu     sync.Mutex
	closed bool          // the transfer stopped waiting
	conn   chan net.Conn // one, buffered
}

// hand gives the waiting transfer its connection, or closes it when the
// transfer stopped waiting.
func (w *bulkWait) hand(c net.Conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		c.Close()
		return
	}
	w.conn <- c
}

// expect issues a ticket for a bulk connection from ag. The returned done
// withdraws it; a connection that arrived and was not taken is closed.
func (h *bulkHub) expect(ag subjects.Agent, pub string) (string, *bulkWait, func()) {
	ticket := "b" + rand.Text()
	w := &bulkWait{ag: ag, pub: pub, conn: make(chan net.Conn, 1)}
	h.mu.Lock()
	if h.waits == nil {
		h.waits = map[string]*bulkWait{}
	}
	h.waits[ticket] = w
	issued := h.issued
	h.mu.Unlock()
	if issued != nil {
		issued(ticket)
	}
	return ticket, w, func() {
		h.mu.Lock()
		delete(h.waits, ticket)
		h.mu.Unlock()
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		select {
		case c := <-w.conn:
			c.Close()
		default:
		}
	}
}

// claim checks a bulk connection's ticket and signature and takes the
// ticket: once only, and only with a signature of the ticket by the public
// key bound to the agent it was issued to. A bad signature leaves the
// ticket to its agent.
func (h *bulkHub) claim(auth wire.BulkAuth) (*bulkWait, error) {
	h.mu.Lock()
	w := h.waits[auth.Ticket]
	h.mu.Unlock()
	if w == nil {
		return nil, wire.Errorf(wire.CodeUnauthenticated, "", "no such bulk ticket (used, withdrawn or never issued)")
	}
	kp, err := nkeys.FromPublicKey(w.pub)
	if err != nil {
		return nil, wire.Errorf(wire.CodeUnauthenticated, "", "bulk ticket: the agent's key: %v", err)
	}
	if kp.Verify(wire.BulkSigned(w.ag.Workspace, w.ag.ID, auth.Ticket), auth.Signature) != nil {
		return nil, wire.Errorf(wire.CodeUnauthenticated, "", "bulk ticket: the signature is not the agent's")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waits[auth.Ticket] != w {
		return nil, wire.Errorf(wire.CodeUnauthenticated, "", "no such bulk ticket (used, withdrawn or never issued)")
	}
	delete(h.waits, auth.Ticket)
	h.claimed.Add(1)
	return w, nil
}

// handleBulk takes a bulk connection: GET wire.BulkPath with Upgrade
// wire.BulkUpgrade, a ticket and the agent's signature of it. It answers
// 101 and hands the connection to the transfer that issued the ticket.
func (s *Server) handleBulk(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), wire.BulkUpgrade) {
		writeError(s.log, w, r, wire.Errorf(wire.CodeInvalidArgument, "", "%s takes an upgrade to %s", wire.BulkPath, wire.BulkUpgrade))
		return
	}
	auth, err := wire.ParseBulkAuth(r.Header.Get(wire.BulkTicketHeader), r.Header.Get(wire.BulkSignatureHeader))
	if err != nil {
		writeError(s.log, w, r, err)
		return
	}
	wait, err := s.bulk.claim(auth)
	if err != nil {
		s.log.Warn("bulk connection refused", "remote", r.RemoteAddr, "err", err)
		writeError(s.log, w, r, err)
		return
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeError(s.log, w, r, err)
		return
	}
	_ = conn.SetDeadline(time.Time{})
	if _, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+wire.BulkUpgrade+"\r\n\r\n"); err != nil {
		conn.Close()
		return
	}
	if n := buf.Reader.Buffered(); n > 0 {
		conn = &prefixedConn{Conn: conn, r: io.MultiReader(io.LimitReader(buf.Reader, int64(n)), conn)}
	}
	wait.hand(conn)
}

// prefixedConn is a hijacked connection whose first bytes were read ahead.
type prefixedConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// bulkOpen asks the agent for a bulk connection with op, whose body
// carries the ticket, and returns the connection. finish waits for the
// op's reply (it comes when the agent has the connection; a call that
// failed after the connection arrived does not matter). Any error means no
// byte moved: the caller falls back to NATS.
func (x *fileRelay) bulkOpen(ctx context.Context, op string, body func(ticket string) any, opts func(ticket string) rpc.CallOptions) (net.Conn, func(), error) {
	if x.bulk == nil {
		return nil, nil, errNoBulk
	}
	ticket, wait, withdraw, err := x.bulk.s.bulkTicket(ctx, x.ws, x.t)
	if err != nil {
		return nil, nil, err
	}
	defer withdraw()
	reply := make(chan error, 1)
	go func() { reply <- x.t.Concurrent().Call(ctx, op, body(ticket), nil, opts(ticket)) }()
	finish := func() { <-reply }
	select {
	case c := <-wait.conn:
		return c, finish, nil
	case err := <-reply:
		if err != nil {
			return nil, nil, err
		}
	case <-ctx.Done():
		finish()
		return nil, nil, ctx.Err()
	}
	c, err := arrived(ctx, wait.conn)
	if err != nil {
		return nil, nil, err
	}
	return c, func() {}, nil
}

// bulkOwn says whether err, an agent's answer to a request that carried a
// bulk ticket, is the agent's own error, which ends the transfer with it:
// not one of the connection (unavailable: it could not dial, or its
// writes failed) nor that of an agent that takes no ticket (unsupported,
// invalid_argument), after which the batch goes over NATS instead.
func bulkOwn(err error) bool {
	if err == nil {
		return false
	}
	we := wire.AsError(err)
	return we == nil || we.Code != wire.CodeUnavailable && we.Code != wire.CodeUnsupported && we.Code != wire.CodeInvalidArgument
}

// errBulkLate: the agent said it made its bulk connection, and it did
// not arrive within bulkArrive.
var errBulkLate = errors.New("the agent made its bulk connection, but it did not arrive")

// arrived waits for the connection claimed with a ticket (conns, from its
// bulkWait): errBulkLate after bulkArrive, ctx's error when ctx ends.
func arrived(ctx context.Context, conns <-chan net.Conn) (net.Conn, error) {
	t := time.NewTimer(bulkArrive)
	defer t.Stop()
	select {
	case c := <-conns:
		return c, nil
	case <-t.C:
		return nil, errBulkLate
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// bulkTicket issues a ticket for a bulk connection from the agent t points
// at (a session's active backend), bound to that agent's enrolled key: an
// agent the call reaches instead cannot claim it. withdraw forgets it.
// errNoBulk when the agent has no key to bind it to.
func (s *Server) bulkTicket(ctx context.Context, ws string, t target) (ticket string, wait *bulkWait, withdraw func(), err error) {
	ag := subjects.Agent{Workspace: ws, ID: t.LastAgent()}
	if ag.ID == "" {
		return "", nil, nil, errNoBulk
	}
	rec, _, err := s.enrolledAgent(ctx, ag)
	if err != nil {
		return "", nil, nil, err
	}
	if rec.PublicKey == "" {
		return "", nil, nil, errNoBulk
	}
	ticket, wait, withdraw = s.bulk.expect(ag, rec.PublicKey)
	return ticket, wait, withdraw, nil
}

// errNoBulk: no bulk connection for this transfer; NATS carries it.
var errNoBulk = errors.New("no bulk connection")

// bulkDownload copies bytes [from, to) of the open handle from a bulk
// connection to w and returns how many it wrote. fallback tells whether
// the rest may still go over NATS: the bulk connection failed (or never
// came), not the write to w.
func (x *fileRelay) bulkDownload(ctx context.Context, w io.Writer, handle string, from, to int64) (n int64, fallback bool, err error) {
	conn, finish, err := x.bulkOpen(ctx, wire.OpFsSend,
		func(tk string) any {
			return &wire.FsSendRequest{Handle: handle, Offset: from, Length: to - from, Ticket: tk}
		},
		func(string) rpc.CallOptions { return fileCall() })
	if err != nil {
		return 0, true, err
	}
	defer finish()
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	want := to - from
	if _, ok := conn.(*net.TCPConn); ok {
		// Plain TCP both ways: the response's ReadFrom splices the
		// connection into the client's, no copy through the control plane.
		for n < want {
			_ = conn.SetReadDeadline(time.Now().Add(bulkIdle))
			m, err := io.Copy(w, io.LimitReader(conn, min(want-n, 8<<20)))
			n += m
			if err != nil {
				// A splice error may be either side's: after a failed
				// write to the client, the fallback's first write fails too.
				return n, true, err
			}
			if m == 0 {
				return n, true, io.ErrUnexpectedEOF
			}
		}
		return n, false, nil
	}
	buf := bulkBufs.Get().(*[]byte)
	defer bulkBufs.Put(buf)
	for n < want {
		_ = conn.SetReadDeadline(time.Now().Add(bulkIdle))
		m, rerr := io.ReadFull(conn, (*buf)[:min(want-n, int64(len(*buf)))])
		if m > 0 {
			if _, err := w.Write((*buf)[:m]); err != nil {
				return n, false, err
			}
			n += int64(m)
		}
		if rerr != nil {
			return n, true, rerr
		}
	}
	return n, false, nil
}

var bulkBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// castagnoli is the CRC-32C table. What goes on a bulk connection is
// checked end to end with a CRC-32C (the commit's crc), not a second
// SHA-256: a tenth of the CPU. The chunks over NATS keep the SHA-256,
// which also catches an in-place buffer reused too early.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// bulkUpload sends first (n bytes) and the rest of body to the upload
// handle on a bulk connection and returns the size and CRC-32C sent.
// started is false when no byte went: the caller may send the chunks over
// NATS instead.
func (x *fileRelay) bulkUpload(ctx context.Context, handle string, body io.Reader, first []byte) (size int64, crc uint32, started bool, err error) {
	if x.size >= 0 && x.size < bulkMin {
		return 0, 0, false, errNoBulk
	}
	conn, finish, err := x.bulkOpen(ctx, wire.OpFsUploadRecv,
		func(tk string) any { return &wire.FsUploadRecvRequest{Handle: handle, Ticket: tk} },
		func(string) rpc.CallOptions {
			o := fileCall()
			o.IdempotencyKey = handle + "@recv"
			return o
		})
	if err != nil {
		return 0, 0, false, err
	}
	defer finish()
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	g := gatherOf(conn)
	send := func(p []byte) error {
		crc = crc32.Update(crc, castagnoli, p)
		_ = conn.SetWriteDeadline(time.Now().Add(bulkIdle))
		if err := writeGathered(conn, p, g); err != nil {
			return wire.Errorf(wire.CodeUnavailable, "", "bulk connection to the agent: %v", err)
		}
		size += int64(len(p))
		return nil
	}
	if err := send(first); err != nil {
		return 0, 0, true, err
	}
	buf := bulkBufs.Get().(*[]byte)
	defer bulkBufs.Put(buf)
	for {
		m, done, err := readChunk(body, *buf)
		if err != nil {
			return 0, 0, true, err
		}
		if m > 0 {
			if err := send((*buf)[:m]); err != nil {
				return 0, 0, true, err
			}
		}
		if done {
			break
		}
	}
	if err := closeWrite(conn); err != nil {
		return 0, 0, true, wire.Errorf(wire.CodeUnavailable, "", "bulk connection to the agent: %v", err)
	}
	return size, crc, true, nil
}

// closeWrite ends what the control plane sends on a bulk connection (TLS:
// close_notify; TCP: FIN) and keeps the connection open.
func closeWrite(c net.Conn) error {
	if p, ok := c.(*prefixedConn); ok {
		c = p.Conn
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("the connection cannot close its write side")
}

// writeGathered writes p to dst, gathering its TLS records on g if any.
func writeGathered(dst net.Conn, p []byte, g *gatherConn) error {
	if g == nil {
		_, err := dst.Write(p)
		return err
	}
	done := g.Gather()
	_, err := dst.Write(p)
	if ferr := done(); err == nil {
		err = ferr
	}
	return err
}
