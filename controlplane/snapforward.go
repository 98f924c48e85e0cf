package controlplane

import (
	"context"
	"strconv"
	"sync"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// forwarder sends chunks on their way into the store straight on to a
// restore that lacks them (a carry): batches of up to batchBytes,
// snapWindow in flight. Its methods are safe for concurrent use.
type forwarder struct {
	s      *Server
	t      target
	h      string
	refs   []chunkRef // what the restore lacks, in order
	limit  int
	ctx    context.Context
	cancel context.CancelCauseFunc
	sem    chan struct{}
	wg     sync.WaitGroup

	mu        sync.Mutex
	want      map[string]bool // lacked and not sent yet
	buf       *wire.SnapRestoreChunksRequest
	n         int
	sent      int64
	committed bool
}

// forwardBufs are batch buffers of forwarders: a first carry of 1 GiB
// filled 512 of 2 MiB each, all garbage once sent.
var forwardBufs sync.Pool

// forwardBuf is an empty batch buffer with room for limit bytes.
func forwardBuf(limit int) []byte {
	if b, ok := forwardBufs.Get().(*[]byte); ok && cap(*b) >= limit {
		return (*b)[:0]
	}
	return make([]byte, 0, limit)
}

func (s *Server) newForwarder(ctx context.Context, t target, h string, refs []chunkRef) *forwarder {
	ctx, cancel := context.WithCancelCause(ctx)
	f := &forwarder{s: s, t: t, h: h, refs: refs, limit: s.batchBytes(), ctx: ctx, cancel: cancel,
		sem: make(chan struct{}, snapWindow), want: make(map[string]bool, len(refs))}
	for _, r := range refs {
		f.want[string(r.sum)] = true
	}
	return f
}

// take forwards data (chunk r, which it copies) when the restore lacks it.
func (f *forwarder) take(r chunkRef, data []byte) error {
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
	// wire allows, which halved them), and hold at most MaxSnapSums.
	if f.buf != nil && (len(f.buf.Data)+len(data) > f.limit || len(f.buf.Sizes) >= wire.MaxSnapSums) {
		f.sendLocked()
	}
	if f.buf == nil {
		f.buf = &wire.SnapRestoreChunksRequest{Handle: f.h, Data: forwardBuf(f.limit)}
	}
	f.buf.Sums = append(f.buf.Sums, r.sum...)
	f.buf.Sizes = append(f.buf.Sizes, r.size)
	f.buf.Data = append(f.buf.Data, data...)
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
	req, key := f.buf, f.h+"@f"+strconv.Itoa(f.n)
	f.buf = nil
	f.n++
	select {
	case f.sem <- struct{}{}:
	case <-f.ctx.Done():
		return
	}
	f.sent += int64(len(req.Data))
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer func() { <-f.sem }()
		err := f.t.Concurrent().Call(f.ctx, wire.OpSnapRestoreChunks, req, nil, snapCall(fileCallTimeout, key))
		// The request was encoded (copied) before the call returned:
		// its batch buffer is free.
		forwardBufs.Put(&req.Data)
		if err != nil {
			f.cancel(err)
		}
	}()
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
