// The control plane's half of file transfers: wire/PROTOCOL.md, "Transfers,
// step by step", describes both halves; agent/transfers.go is the other.

package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// Transfer sizing: chunks well below the NATS max payload, several in
// flight so one transfer keeps the link busy. At most window+1 chunks of one
// transfer are in the control plane's memory at once.
const (
	defaultChunk   = 2 << 20
	minChunk       = 64 << 10
	transferWindow = 6
	// cleanupTimeout bounds the abort or close sent after a failed transfer.
	cleanupTimeout = 10 * time.Second
)

// fileRelay moves one file between an HTTP body and an agent in chunks.
type fileRelay struct {
	t      target
	chunk  int
	window int
	bulk   *bulkSide // nil: only NATS (withBulk)
	ws     string    // the target's workspace, with bulk
	size   int64     // the upload's Content-Length, -1 when unknown
}

// newRelay sizes chunks to a quarter of the connection's max payload, at
// most defaultChunk.
func (s *Server) newRelay(t target) *fileRelay {
	chunk := defaultChunk
	if mp := s.nc.MaxPayload(); mp > 0 {
		chunk = min(chunk, int(mp/4))
	}
	return &fileRelay{t: t, chunk: max(chunk, minChunk), window: transferWindow}
}

// readChunk fills buf from r; it returns fewer bytes only at r's end
// (done). Any error but a clean EOF is an error: a body cut short is never
// taken for a shorter file.
func readChunk(r io.Reader, buf []byte) (n int, done bool, err error) {
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if errors.Is(err, io.EOF) {
			return n, true, nil
		}
		if err != nil {
			return n, false, wire.Errorf(wire.CodeInvalidArgument, wire.ReasonBodyIncomplete, "reading the request body: %v", err)
		}
	}
	return n, false, nil
}

// upload writes body to the file opts names. A body that fits one chunk is
// one fs.write; a larger one is begun, sent in chunks with up to window in
// flight, and committed with its size and SHA-256. On any failure the upload
// is aborted: the old file stays, and nothing is left behind.
func (x *fileRelay) upload(ctx context.Context, body io.Reader, opts wire.FsWriteOptions) (*wire.FsWriteResult, error) {
	first := x.getChunk()
	n, done, err := readChunk(body, (*first)[wire.Headroom:])
	if err != nil {
		x.putChunk(first)
		return nil, err
	}
	var res wire.FsWriteResult
	if done {
		defer x.putChunk(first)
		data := (*first)[wire.Headroom : wire.Headroom+n]
		err := x.t.Call(ctx, wire.OpFsWrite, &wire.FsWriteRequest{FsWriteOptions: opts, Data: data}, &res, fileCall())
		return &res, err
	}
	var begun wire.FsUploadBeginResult
	if err := x.t.Call(ctx, wire.OpFsUploadBegin, &wire.FsUploadBeginRequest{FsWriteOptions: opts}, &begun, fileCall()); err != nil {
		x.putChunk(first)
		return nil, err
	}
	commit := &wire.FsUploadCommitRequest{Handle: begun.Handle}
	size, crc, started, err := x.bulkUpload(ctx, begun.Handle, body, (*first)[wire.Headroom:wire.Headroom+n])
	if started {
		x.putChunk(first)
		commit.Size, commit.CRC32C = size, &crc
	} else {
		send := x.uploadChunks(begun.Handle)
		commit.Size, err = x.sendChunks(ctx, send, body, first, n)
		commit.SHA256 = hex.EncodeToString(send.hash.Sum(nil))
	}
	if err == nil {
		if err = x.t.Call(ctx, wire.OpFsUploadCommit, commit, &res, fileCall()); err == nil {
			return &res, nil
		}
	}
	aerr := x.cleanup(ctx, wire.OpFsUploadAbort, begun.Handle)
	if started && aerr != nil && wire.AsError(aerr).Code != wire.CodeNotFound && !rpc.MaybeDelivered(aerr) {
		// The agent ended the upload itself (its owner's policy, a pause):
		// its reason, not the broken bulk connection it left, is the error.
		return nil, aerr
	}
	return nil, err
}

// cleanup sends a best-effort abort or close for handle, even when ctx is
// done, and returns its error; the agent's idle timeout covers it when this
// fails too.
func (x *fileRelay) cleanup(ctx context.Context, op, handle string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	return x.t.Call(cctx, op, &wire.FsHandleRequest{Handle: handle}, nil, fileCall())
}

// chunkSend says where sendChunks sends: op, with the body mk makes for
// the chunk at off, up to window calls at once; hash, when set, is fed
// every byte sent, in order.
type chunkSend struct {
	op     string
	handle string
	window int
	mk     func(off int64) wire.InPlaceBody
	hash   hash.Hash
}

// uploadChunks is the chunkSend of an fs.upload, hashing with SHA-256.
func (x *fileRelay) uploadChunks(handle string) chunkSend {
	return chunkSend{op: wire.OpFsUploadChunk, handle: handle, window: x.window, hash: sha256.New(),
		mk: func(off int64) wire.InPlaceBody { return &wire.FsUploadChunkRequest{Handle: handle, Offset: off} }}
}

// sendChunks sends first (holding n bytes) and then the rest of body as
// chunks of s.handle, up to s.window at once, and returns the size sent.
// Each chunk is read straight into a free in-place buffer, where its
// request is encoded around it (wire.InPlace): its bytes are not copied
// again before NATS takes them. A buffer stays its chunk's until its call
// returns.
func (x *fileRelay) sendChunks(ctx context.Context, s chunkSend, body io.Reader, first *[]byte, n int) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	handle := s.handle
	free := make(chan *[]byte, s.window)
	for range s.window - 1 {
		free <- x.getChunk()
	}
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		for len(free) > 0 {
			x.putChunk(<-free)
		}
	}()
	var off int64
	buf, done := first, false
	for {
		if s.hash != nil {
			s.hash.Write((*buf)[wire.Headroom : wire.Headroom+n])
		}
		wg.Add(1)
		go func(buf *[]byte, n int, off int64) {
			defer wg.Done()
			req := &wire.InPlace{Body: s.mk(off), Buf: *buf, N: n}
			// Each chunk is its own mutation: a request's Idempotency-Key
			// must not make the agent answer every chunk with the first
			// one's reply.
			opts := fileCall()
			opts.IdempotencyKey = handle + "@" + strconv.FormatInt(off, 10)
			if err := x.t.Concurrent().Call(ctx, s.op, req, nil, opts); err != nil {
				cancel(err)
			}
			free <- buf
		}(buf, n, off)
		off += int64(n)
		if done {
			break
		}
		select {
		case buf = <-free:
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
		var err error
		if n, done, err = readChunk(body, (*buf)[wire.Headroom:]); err != nil {
			free <- buf
			cancel(err)
			return 0, err
		}
		if n == 0 && done {
			free <- buf
			break
		}
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return 0, err
	}
	return off, nil
}

// readPiece is one chunk of a download on its way. Its data aliases the
// reply that carried it (Response.Into decodes it so): it is not copied
// between NATS and the HTTP response.
type readPiece struct {
	off, n int64
	data   []byte
	err    error
	done   chan struct{}
}

// download writes bytes [from, to) of the open handle to w, reading up to
// window chunks ahead. A chunk that comes back short (the agent's view of
// the file changed) is an error.
func (x *fileRelay) download(ctx context.Context, w io.Writer, handle string, from, to int64) error {
	if to-from >= bulkMin {
		n, fallback, err := x.bulkDownload(ctx, w, handle, from, to)
		if err == nil || !fallback {
			return err
		}
		from += n
		if from == to {
			return nil
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	queue := make(chan *readPiece, x.window)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(queue)
		for off := from; off < to; off += int64(x.chunk) {
			p := &readPiece{off: off, n: min(int64(x.chunk), to-off), done: make(chan struct{})}
			select {
			case queue <- p:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(p.done)
				var res wire.FsReadResult
				p.err = x.t.Concurrent().Call(ctx, wire.OpFsRead, &wire.FsReadRequest{Handle: handle, Offset: p.off, Length: p.n}, &res, fileCall())
				p.data = res.Data
			}()
		}
	}()
	for p := range queue {
		<-p.done
		if err := x.deliver(w, p); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// deliver writes one piece.
func (x *fileRelay) deliver(w io.Writer, p *readPiece) error {
	if p.err != nil {
		return p.err
	}
	if int64(len(p.data)) != p.n {
		return wire.Errorf(wire.CodeConflict, "", "file changed size during the download: %d bytes at %d, wanted %d", len(p.data), p.off, p.n)
	}
	_, err := w.Write(p.data)
	p.data = nil
	return err
}

// uploadChunkBufs are in-place buffers of upload chunks (wire.InPlace), reused
// across transfers: a reused buffer keeps its pages mapped, where a fresh
// one is zeroed and faults every 4 KiB.
var uploadChunkBufs sync.Pool

// getChunk returns an in-place buffer for one chunk.
func (x *fileRelay) getChunk() *[]byte {
	if b, ok := uploadChunkBufs.Get().(*[]byte); ok && len(*b) == wire.Headroom+x.chunk {
		return b
	}
	b := wire.NewInPlaceBuf(x.chunk)
	return &b
}

func (x *fileRelay) putChunk(b *[]byte) { uploadChunkBufs.Put(b) }
