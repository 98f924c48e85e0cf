package controlplane

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// forwarder sends chunks on their way into the store straight on to a
// restore that lacks them (a carry): batches of up to batchBytes,
// snapWindow in flight. On bulk connections, a batch is the chunks
// where the pull read them (its bulk buffers, held by their pullLease
// until the batch is sent): a chunk is not copied in the control plane
// on its way to the restore. Otherwise each batch is gathered in the
// buffer it is sent from (encoded in place, wire.InPlace, with
// forwardRoom before the data for the envelope and the chunks' names and
// sizes): a chunk is copied once. Its methods are safe for concurrent
// use.
type forwarder struct {
	s  *Server
	t  target
	ws string
	h  string
	// bulk: batches go on bulk connections (sendBulk), up to
	// snapBulkBatch each; it is set false after one that failed.
	bulk   atomic.Bool
	refs   []chunkRef // what the restore lacks, in order
	limit  int        // a batch's bytes
	nats   int        // a batch's bytes over NATS (limit, but on bulk connections)
	ctx    context.Context
	cancel context.CancelCauseFunc
	sem    chan struct{}
	wg     sync.WaitGroup

	bufs *freeBufs // batch buffers, forwardRoom+limit bytes each

	mu        sync.Mutex
	want      map[string]bool // lacked and not sent yet
	buf       *forwardBatch
	n         int
	sent      int64
	committed bool
}

// forwardRoom is the room a batch buffer keeps before its data: the
// envelope (wire.Headroom at most, else it is copied) and 37 bytes per
// chunk (a name and a size). A batch closes when its next chunk's would
// not fit (forwardHead), so this bounds a batch to 857 chunks: 2 MiB of
// the smallest files of a tree (2 KB and up) take about 1,000.
const forwardRoom = 32 << 10

// forwardLeases bounds the pull buffers a forward batch holds (their
// pullLeases); its chunks from others are copied. The pulls in flight
// (snapWindow, and those starting as others end) fill a batch together
// when the restore lacks what they pull: a first carry's batches held 6
// (of 64 MiB, TestCarryForwardsFromReusedPullBuffers' tree). When it lacks few of their chunks (a target with
// most of the tree), a batch fills from many pull buffers, and held
// they would keep the tree's pulled bytes in memory until it is full.
const forwardLeases = snapWindow + 2

// forwardHead is what a batch's chunks take of forwardRoom: the envelope
// is counted at wire.Headroom.
func forwardHead(chunks int) int { return wire.Headroom + chunks*(wire.SumSize+5) }

// forwardBatch is a batch being gathered: the chunks' names and sizes,
// and their data (n bytes) in buf[forwardRoom:forwardRoom+n], or, when
// buf is nil (inParts), in data, held by leases until the batch is sent.
type forwardBatch struct {
	sums   []byte
	sizes  []uint32
	buf    *[]byte
	n      int
	data   [][]byte
	leases []*pullLease
}

// inParts says b's data is in data, where the pulls read it, not in buf.
func (b *forwardBatch) inParts() bool { return b.buf == nil }

// done lets go of what b holds: its buffer, or its chunks' leases.
func (b *forwardBatch) done(bufs *freeBufs) {
	if b.buf != nil {
		bufs.put(b.buf)
	}
	for _, l := range b.leases {
		l.release(true)
	}
}

// contiguous is b's data in one slice (a copy when it is in parts).
func (b *forwardBatch) contiguous() []byte {
	if b.inParts() {
		return bytes.Join(b.data, nil)
	}
	return (*b.buf)[forwardRoom : forwardRoom+b.n]
}

// newForwarder forwards to restore h on t (in workspace ws) the chunks
// refs it lacks. When they come to bulkMin or more, its batches go on
// bulk connections, outside the NATS server (sendBulk).
func (s *Server) newForwarder(ctx context.Context, t target, ws, h string, refs []chunkRef) *forwarder {
	ctx, cancel := context.WithCancelCause(ctx)
	f := &forwarder{s: s, t: t, ws: ws, h: h, refs: refs, limit: s.batchBytes(), nats: s.batchBytes(), ctx: ctx, cancel: cancel,
		sem: make(chan struct{}, snapWindow), want: make(map[string]bool, len(refs))}
	for _, r := range refs {
		f.want[string(r.sum)] = true
	}
	if s.snapBulk(refs) {
		f.bulk.Store(true)
		f.limit = snapBulkBatch
	}
	f.bufs = &freeBufs{size: forwardRoom + f.limit}
	return f
}

// take forwards data (chunk r) when the restore lacks it. With lease
// (data is in a pull's bulk buffer) and on bulk connections, the batch
// holds the lease and sends data from where it is (but past
// forwardLeases leases, or in a batch begun with a copy, it copies
// data); else it copies data.
func (f *forwarder) take(r chunkRef, data []byte, lease *pullLease) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := context.Cause(f.ctx); err != nil {
		return err
	}
	if !f.want[string(r.sum)] {
		return nil
	}
	delete(f.want, string(r.sum))
	// A batch goes when the next chunk would not fit it: batches are
	// filled to the limit (not to the limit less the largest chunk the
	// wire allows, which halved them), and hold at most MaxSnapSums, and
	// as many names and sizes as forwardRoom has room for.
	// A batch's kind is its first chunk's: a chunk of the other kind
	// (of a pull that fell back to NATS while others still came on bulk
	// connections) is copied into it, not sent in a batch of its own.
	bulk := f.bulk.Load()
	if b := f.buf; b != nil && (b.n+len(data) > f.limit || len(b.sizes) >= wire.MaxSnapSums || forwardHead(len(b.sizes)+1) > forwardRoom || b.inParts() && !bulk) {
		f.sendLocked()
	}
	if f.buf == nil {
		f.buf = &forwardBatch{}
		if lease == nil || !bulk {
			f.buf.buf = f.bufs.get(forwardRoom + f.limit)
		}
	}
	b := f.buf
	b.sums = append(b.sums, r.sum...)
	b.sizes = append(b.sizes, r.size)
	if b.inParts() {
		switch {
		case lease != nil && slices.Contains(b.leases, lease):
		case lease != nil && len(b.leases) < forwardLeases:
			lease.hold()
			b.leases = append(b.leases, lease)
		default:
			data = bytes.Clone(data)
		}
		b.data = append(b.data, data)
		b.n += len(data)
	} else {
		b.n += copy((*b.buf)[forwardRoom+b.n:], data)
	}
	if len(f.want) == 0 {
		// The last chunk the restore lacks: its batch goes now, not
		// when the pull has every store's acknowledgement (deliver).
		f.sendLocked()
	}
	return nil
}

// sendLocked sends the batch being filled, waiting for a place in the
// window (with f.mu held: a full window holds the chunks coming in).
func (f *forwarder) sendLocked() {
	b, key := f.buf, f.h+"@f"+strconv.Itoa(f.n)
	f.buf = nil
	f.n++
	select {
	case f.sem <- struct{}{}:
	case <-f.ctx.Done():
		b.done(f.bufs)
		return
	}
	f.sent += int64(b.n)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer func() { <-f.sem }()
		if f.s != nil && f.s.beforeForward != nil {
			f.s.beforeForward()
		}
		var err error
		switch {
		case f.bulk.Load():
			var fallback bool
			if fallback, err = f.sendBulk(b, key); fallback && f.ctx.Err() == nil {
				f.bulk.Store(false)
				f.s.snapBulkFallbacks.Add(1)
				f.s.log.Debug("carry forward: over NATS from here", "ws", f.ws, "err", err)
				err = f.sendNATS(b, key)
			}
		case b.n > f.nats || b.inParts():
			// A batch gathered for a bulk connection, after one failed.
			err = f.sendNATS(b, key)
		default:
			req := &wire.InPlace{Body: &wire.SnapRestoreChunksRequest{Handle: f.h, Sums: b.sums, Sizes: b.sizes}, Buf: *b.buf, N: b.n, Room: forwardRoom}
			err = f.t.Concurrent().Call(f.ctx, wire.OpSnapRestoreChunks, req, nil, snapCall(fileCallTimeout, key))
		}
		// The request was sent (copied into the connection's buffer)
		// before the call returned: its batch buffer, or the pull
		// buffers its chunks are in, are free (of it).
		b.done(f.bufs)
		if err != nil {
			f.cancel(err)
		}
	}()
}

// sendBulk sends batch b on a bulk connection: snap.restore.chunks with
// the names, sizes and a ticket, the data on the connection the agent
// makes with it. fallback says the batch may go over NATS instead: the
// connection never came or broke, and the agent's answer is no error of
// its own (a chunk delivered twice is written once: a restore writes a
// chunk it no longer lacks nowhere).
func (f *forwarder) sendBulk(b *forwardBatch, key string) (fallback bool, err error) {
	ticket, wait, withdraw, err := f.s.bulkTicket(f.ctx, f.ws, f.t)
	if err != nil {
		return true, err
	}
	defer withdraw()
	req := &wire.SnapRestoreChunksRequest{Handle: f.h, Sums: b.sums, Sizes: b.sizes, Ticket: ticket}
	callCtx, stopCall := context.WithCancel(f.ctx)
	defer stopCall()
	reply := make(chan error, 1)
	go func() {
		reply <- f.t.Concurrent().Call(callCtx, wire.OpSnapRestoreChunks, req, nil, snapCall(fileCallTimeout, key+"b"))
	}()
	var conn net.Conn
	select {
	case conn = <-wait.conn:
	case err := <-reply:
		if err == nil {
			err = errBulkLate // it cannot have read the chunks
		}
		return !bulkOwn(err) || errors.Is(err, errBulkLate), err
	case <-f.ctx.Done():
		stopCall()
		<-reply
		return false, context.Cause(f.ctx)
	}
	defer conn.Close()
	stop := context.AfterFunc(f.ctx, func() { conn.Close() })
	defer stop()
	_ = conn.SetWriteDeadline(time.Now().Add(bulkIdle))
	var werr error
	if b.inParts() {
		werr = writeParts(conn, b.data, gatherOf(conn))
	} else {
		werr = writeGathered(conn, (*b.buf)[forwardRoom:forwardRoom+b.n], gatherOf(conn))
	}
	if werr != nil {
		conn.Close()
		err := <-reply
		if bulkOwn(err) {
			return false, err
		}
		return true, werr
	}
	err = <-reply
	return err != nil && !bulkOwn(err), err
}

// sendNATS sends batch b over NATS in requests of at most batchBytes of
// data (a batch gathered for a bulk connection is larger).
func (f *forwarder) sendNATS(b *forwardBatch, key string) error {
	data := b.contiguous()
	var refs []chunkRef
	for i, n := range b.sizes {
		refs = append(refs, chunkRef{sum: b.sums[i*wire.SumSize : (i+1)*wire.SumSize], size: n})
	}
	off := 0
	for j, sub := range batches(refs, f.nats) {
		req := &wire.SnapRestoreChunksRequest{Handle: f.h}
		n := 0
		for _, r := range sub {
			req.Sums = append(req.Sums, r.sum...)
			req.Sizes = append(req.Sizes, r.size)
			n += int(r.size)
		}
		req.Data = data[off : off+n]
		off += n
		if err := f.t.Concurrent().Call(f.ctx, wire.OpSnapRestoreChunks, req, nil, snapCall(fileCallTimeout, key+"n"+strconv.Itoa(j))); err != nil {
			return err
		}
	}
	return nil
}

// stop ends the forwarding after a failure and waits for its calls.
func (f *forwarder) stop() {
	if f == nil {
		return
	}
	f.cancel(context.Canceled)
	f.wg.Wait()
}

// deliver sends the last batch, then what the restore still lacks from
// the store (content the store had before), and waits for every call; a
// carry runs it while it records the snapshot. stop cuts it short.
func (f *forwarder) deliver(ws string) error {
	f.mu.Lock()
	if f.buf != nil {
		f.sendLocked()
	}
	f.mu.Unlock()
	f.wg.Wait()
	if err := context.Cause(f.ctx); err != nil {
		return err
	}
	var rest []chunkRef
	for _, r := range f.refs {
		if f.want[string(r.sum)] {
			rest = append(rest, r)
		}
	}
	sent, err := f.s.pushChunks(f.ctx, f.t, ws, f.h, rest)
	f.mu.Lock()
	f.sent += sent
	f.mu.Unlock()
	return err
}

// commit commits the delivered restore.
func (f *forwarder) commit(ctx context.Context) (*client.RestoreResult, error) {
	f.mu.Lock()
	sent := f.sent
	f.mu.Unlock()
	res, err := f.s.commitRestore(ctx, f.t, f.h, sent)
	f.committed = err == nil
	return res, err
}

// writeParts writes parts on dst one after the other, TLS records
// gathered on g as writeGathered's; on a plain TCP connection, with
// writev (net.Buffers). parts is left as it is.
func writeParts(dst net.Conn, parts [][]byte, g *gatherConn) error {
	if p, ok := dst.(*prefixedConn); ok {
		dst = p.Conn // it reads ahead; its writes are its connection's
	}
	if g != nil {
		done := g.Gather()
		var err error
		for _, p := range parts {
			if _, err = dst.Write(p); err != nil {
				break
			}
		}
		if ferr := done(); err == nil {
			err = ferr
		}
		return err
	}
	bufs := append(net.Buffers(nil), parts...) // WriteTo consumes its slice
	_, err := bufs.WriteTo(dst)
	return err
}
