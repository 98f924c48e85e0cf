// The agent's side of bulk connections (wire.BulkPath): a download's or an
// upload's bytes on a connection of their own to the control plane, instead
// of in chunks over NATS. wire/PROTOCOL.md, "Transfers, step by step",
// describes both sides; controlplane/bulk.go is the other.

package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/bulkconn"
	"github.com/outposthq/outpost/proxy"
	"github.com/outposthq/outpost/wire"
)

// bulkIdle bounds one read or write of a bulk connection: a peer that
// takes no bytes (or sends none) for this long ends the transfer. A
// variable for tests.
var bulkIdle = 30 * time.Second

// Bulk connection limits.
const (
	// bulkDialTimeout bounds the dial, the TLS handshake and the upgrade.
	bulkDialTimeout = 10 * time.Second
	// bulkPiece is how many bytes one read or write moves.
	bulkPiece = 256 << 10
	// sendfilePiece is how many bytes one sendfile moves before the write
	// deadline is pushed on and the transfer's idle clock restarted.
	sendfilePiece = 8 << 20
	// streamDialWait bounds a stream's bulk dial (an attach stream's or a
	// port stream's: a terminal or a forwarded connection does not wait
	// the 10 s of a transfer's for a control plane it cannot reach), and
	// streamDialPause is how long after a failed one streams go over NATS
	// without trying.
	streamDialWait  = 3 * time.Second
	streamDialPause = 30 * time.Second
)

// bulkDialer makes the agent's bulk connections: to the control plane's
// URL the agent enrolled with (never one a request names), through the
// same proxy and with the same pinned CA as everything else, claimed with
// the ticket the control plane issued, signed with the agent's nkey.
type bulkDialer struct {
	id    *enroll.Config
	base  *url.URL
	tls   *tls.Config // nil for http://
	proxy *proxy.Dialer

	streamFailed atomic.Int64 // Unix ns of the last failed dialStream
}

// newBulkDialer returns nil (no bulk connections: every transfer goes over
// NATS) when the identity names no http(s) control plane URL.
func newBulkDialer(id *enroll.Config, pick proxy.Func) *bulkDialer {
	u, err := url.Parse(id.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil
	}
	d := &bulkDialer{id: id, base: u, proxy: &proxy.Dialer{Proxy: pick, Scheme: u.Scheme, Timeout: bulkDialTimeout}}
	if u.Scheme == "https" {
		if d.tls, err = id.TLSConfig(); err != nil {
			return nil
		}
	}
	return d
}

// dial opens a bulk connection for ticket. The returned reader reads the
// connection (with what came after the upgrade's answer).
func (d *bulkDialer) dial(ctx context.Context, ticket string) (net.Conn, io.Reader, error) {
	if d == nil {
		return nil, nil, wire.Errorf(wire.CodeUnsupported, "", "this agent has no control plane URL for bulk connections")
	}
	ctx, cancel := context.WithTimeout(ctx, bulkDialTimeout)
	defer cancel()
	addr := d.base.Host
	if d.base.Port() == "" {
		addr = net.JoinHostPort(d.base.Hostname(), map[string]string{"http": "80", "https": "443"}[d.base.Scheme])
	}
	raw, err := d.proxy.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, wire.Errorf(wire.CodeUnavailable, "", "bulk connection: %v", err)
	}
	conn := raw
	if d.tls != nil {
		cfg := d.tls.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = d.base.Hostname()
		}
		tc := tls.Client(bulkconn.New(raw), cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, nil, wire.Errorf(wire.CodeUnavailable, "", "bulk connection: %v", err)
		}
		conn = tc
	}
	r, err := d.upgrade(ctx, conn, ticket)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, r, nil
}

// dialStream is dial for a stream (attach or port stream), whose caller
// carries it over NATS when it fails: it gives up after streamDialWait,
// and after a failed one it fails at once, without dialing, for
// streamDialPause.
func (d *bulkDialer) dialStream(ctx context.Context, ticket string) (net.Conn, io.Reader, error) {
	if d == nil {
		return d.dial(ctx, ticket)
	}
	if since := time.Since(time.Unix(0, d.streamFailed.Load())); since < streamDialPause {
		return nil, nil, wire.Errorf(wire.CodeUnavailable, "", "bulk connection: not tried, one failed %v ago", since.Round(time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(ctx, streamDialWait)
	defer cancel()
	conn, r, err := d.dial(ctx, ticket)
	if err != nil {
		d.streamFailed.Store(time.Now().UnixNano())
	}
	return conn, r, err
}

// bulkDialer is how the agent makes bulk connections (nil: it cannot).
func (a *Agent) bulkDialer() *bulkDialer {
	if a.files == nil {
		return nil
	}
	return a.files.bulk
}

// upgrade sends the upgrade request with the ticket and its signature and
// reads the answer.
func (d *bulkDialer) upgrade(ctx context.Context, conn net.Conn, ticket string) (io.Reader, error) {
	kp, err := nkeys.FromSeed([]byte(d.id.Seed))
	if err != nil {
		return nil, fmt.Errorf("bulk connection: %w", err)
	}
	sig, err := kp.Sign(wire.BulkSigned(d.id.Workspace, d.id.Agent, ticket))
	kp.Wipe()
	if err != nil {
		return nil, fmt.Errorf("bulk connection: sign: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: %s\r\n%s: %s\r\n\r\n",
		wire.BulkPath, d.base.Host, wire.BulkUpgrade, wire.BulkTicketHeader, ticket,
		wire.BulkSignatureHeader, wire.EncodeBulkSignature(sig))
	if _, err := io.WriteString(conn, req); err != nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "", "bulk connection: %v", err)
	}
	br := bufio.NewReaderSize(conn, 4<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "", "bulk connection: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return nil, wire.Errorf(wire.CodeUnavailable, "", "bulk connection refused: %s", resp.Status)
	}
	_ = conn.SetDeadline(time.Time{})
	if br.Buffered() == 0 {
		return conn, nil
	}
	return io.MultiReader(io.LimitReader(br, int64(br.Buffered())), conn), nil
}

// bulkJob is a transfer's bulk connection at work: it belongs to the open
// transfer, which ends it (closing the connection) and waits for it.
type bulkJob struct {
	conn net.Conn
	done chan struct{}
	n    int64  // bytes moved, once done is closed
	crc  uint32 // CRC-32C of the bytes received, once done is closed
	err  error  // why it stopped early, once done is closed
}

// stop closes the connection and waits for the job.
func (j *bulkJob) stop() {
	j.conn.Close()
	<-j.done
}

// errBulkBusy refuses a second bulk connection on a handle.
func errBulkBusy(h string) error {
	return wire.Errorf(wire.CodeConflict, "", "transfer %s already has a bulk connection, or ended", h)
}

// startBulk claims t for one bulk job at a time and runs it.
func (fo *fileOps) startBulk(h string, t *openTransfer, conn net.Conn, run func(j *bulkJob) (int64, error)) error {
	j := &bulkJob{conn: conn, done: make(chan struct{})}
	if !fo.transfers.setBulk(h, t, j) {
		conn.Close()
		return errBulkBusy(h)
	}
	go func() {
		defer close(j.done)
		defer conn.Close()
		j.n, j.err = run(j)
	}()
	return nil
}

// send serves fs.send: it dials the control plane and streams the range of
// the open download there. It answers once the connection is made; the
// bytes follow on it.
func (fo *fileOps) send(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsSendRequest](req)
	if err != nil {
		return nil, err
	}
	t, err := fo.transfers.get(body.Handle)
	if err != nil {
		return nil, err
	}
	if t.file == nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is not a download", body.Handle)
	}
	if body.Offset > t.size {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "offset %d is past the end (%d)", body.Offset, t.size)
	}
	if !fo.transfers.setBulk(body.Handle, t, nil) {
		return nil, errBulkBusy(body.Handle)
	}
	n := min(body.Length, t.size-body.Offset)
	conn, _, err := fo.bulk.dial(ctx, body.Ticket)
	if err != nil {
		return nil, err
	}
	touch := func() { _, _ = fo.transfers.get(body.Handle) }
	return struct{}{}, fo.startBulk(body.Handle, t, conn, func(*bulkJob) (int64, error) {
		return sendRange(conn, t.file, body.Offset, n, touch)
	})
}

// sendRange writes n bytes at off of f to conn: with sendfile on a plain
// TCP connection (no copy through the agent), else read and written in
// pieces, gathered under TLS. It stops early at the file's end (it shrank)
// or on the first error; the control plane reads what is missing over NATS.
func sendRange(conn net.Conn, f *os.File, off, n int64, touch func()) (int64, error) {
	if tcp, ok := conn.(*net.TCPConn); ok {
		// The offset of f is this job's: one bulk job a transfer, and fs.read
		// reads at offsets (pread) without it.
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return 0, err
		}
		var sent int64
		for sent < n {
			piece := min(n-sent, sendfilePiece)
			_ = tcp.SetWriteDeadline(time.Now().Add(bulkIdle))
			m, err := tcp.ReadFrom(io.LimitReader(f, piece))
			sent += m
			touch()
			if err != nil {
				return sent, err
			}
			if m < piece {
				return sent, io.ErrUnexpectedEOF
			}
		}
		return sent, nil
	}
	buf := bulkBufs.Get().(*[]byte)
	defer bulkBufs.Put(buf)
	g := bulkconn.Under(conn)
	var sent int64
	for sent < n {
		m, err := f.ReadAt((*buf)[:min(n-sent, bulkPiece)], off+sent)
		if m > 0 {
			_ = conn.SetWriteDeadline(time.Now().Add(bulkIdle))
			if werr := writeGathered(conn, g, (*buf)[:m]); werr != nil {
				return sent, werr
			}
			sent += int64(m)
			touch()
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return sent, err
		}
	}
	return sent, nil
}

// writeGathered writes p to conn, its TLS records in few writes when g
// gathers them.
func writeGathered(conn net.Conn, g *bulkconn.Conn, p []byte) error {
	if g == nil {
		_, err := conn.Write(p)
		return err
	}
	done := g.Gather()
	_, err := conn.Write(p)
	if ferr := done(); err == nil {
		err = ferr
	}
	return err
}

// castagnoli is the CRC-32C table: what came on an upload's bulk
// connection is checked with it (fs.upload.commit's crc), at a tenth of
// SHA-256's cost; the agent's SHA-256 of the file is computed all the same.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var bulkBufs = sync.Pool{New: func() any { b := make([]byte, bulkPiece); return &b }}

// recv serves fs.upload.recv: it dials the control plane and writes what
// comes on the connection into the upload, from the offset on, until the
// control plane closes its side. It answers once the connection is made;
// fs.upload.commit waits for the last byte.
func (fo *fileOps) recv(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsUploadRecvRequest](req)
	if err != nil {
		return nil, err
	}
	t, err := fo.transfers.get(body.Handle)
	if err != nil {
		return nil, err
	}
	if t.upload == nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is not an upload", body.Handle)
	}
	if !fo.transfers.setBulk(body.Handle, t, nil) {
		return nil, errBulkBusy(body.Handle)
	}
	conn, r, err := fo.bulk.dial(ctx, body.Ticket)
	if err != nil {
		return nil, err
	}
	touch := func() { _, _ = fo.transfers.get(body.Handle) }
	return struct{}{}, fo.startBulk(body.Handle, t, conn, func(j *bulkJob) (int64, error) {
		buf := bulkBufs.Get().(*[]byte)
		defer bulkBufs.Put(buf)
		var got int64
		for {
			_ = conn.SetReadDeadline(time.Now().Add(bulkIdle))
			m, err := io.ReadFull(r, *buf)
			if m > 0 {
				if _, werr := t.upload.WriteAt((*buf)[:m], body.Offset+got); werr != nil {
					return got, werr
				}
				j.crc = crc32.Update(j.crc, castagnoli, (*buf)[:m])
				got += int64(m)
				touch()
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				// The control plane closed its side: the commit's size and
				// hash tell a cut from the end.
				return got, nil
			}
			if err != nil {
				return got, err
			}
		}
	})
}
