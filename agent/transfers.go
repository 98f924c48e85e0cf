// The agent's half of file transfers (fs.open, fs.read, fs.close, fs.write
// and fs.upload.*) and its table of open handles: wire/PROTOCOL.md,
// "Transfers, step by step", describes both halves;
// controlplane/transfer.go is the other.

package agent

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/wire"
)

// DefaultTransferIdle is how long an open download or upload may go without
// a request before the agent closes it (an upload is aborted: its temporary
// file removed, the old file left).
const DefaultTransferIdle = 2 * time.Minute

// openTransfer is one open download (file) or upload (upload), under its
// handle.
type openTransfer struct {
	file    *os.File
	size    int64
	upload  *files.Upload
	scan    *files.Scan
	restore *restoreJob
	bulk    *bulkJob // a bulk connection at work, if any
	timer   *time.Timer
	tag     liveTag // the op that opened it, on which path
}

// end stops a bulk job, then closes the file or aborts the upload.
func (t *openTransfer) end() {
	if t.bulk != nil {
		t.bulk.stop()
	}
	if t.file != nil {
		t.file.Close()
	}
	if t.upload != nil {
		t.upload.Abort()
	}
	if t.restore != nil {
		t.restore.abort()
	}
}

// transfers are the open handles of one agent. Each handle ends on its
// close, commit or abort, after idle time without use, or when the agent
// stops; its timer is its only owner besides the map.
type transfers struct {
	idle time.Duration
	run  string // this run's tag, in every handle it opens (handleRun)

	mu     sync.Mutex
	closed bool
	open   map[string]*openTransfer
	gone   gone // why handles were ended by the owner's switches
}

func newTransfers(idle time.Duration) *transfers {
	return &transfers{idle: idle, run: rand.Text()[:runTagLen], open: map[string]*openTransfer{}}
}

// runTagLen is the length of a run's tag in a handle: "t", the tag, then
// rand.Text()'s 26 characters.
const runTagLen = 4

// handleRun is the tag of the run that opened handle h, or "" when h is
// not a handle of this form.
func handleRun(h string) string {
	if len(h) != 1+runTagLen+26 || h[0] != 't' {
		return ""
	}
	return h[1 : 1+runTagLen]
}

// count is the number of open handles.
func (ts *transfers) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.open)
}

// add registers t under a new handle.
func (ts *transfers) add(t *openTransfer) (string, error) {
	h := "t" + ts.run + rand.Text()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		t.end()
		return "", wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentOffline, "agent is stopping")
	}
	ts.open[h] = t
	t.timer = time.AfterFunc(ts.idle, func() { ts.expire(h, t) })
	return h, nil
}

// get returns the transfer of h and restarts its idle clock.
func (ts *transfers) get(h string) (*openTransfer, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.open[h]
	if !ok {
		return nil, ts.missing(h)
	}
	t.timer.Reset(ts.idle)
	return t, nil
}

// setBulk gives t, still h's transfer, the bulk job j; false when t
// ended or has a job already (a job that finished leaves room for a new
// one).
func (ts *transfers) setBulk(h string, t *openTransfer, j *bulkJob) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if !ts.bulkFreeLocked(h, t) {
		return false
	}
	if j != nil {
		t.bulk = j
	}
	return true
}

// bulkFreeLocked: t is still h's transfer and has no bulk job at work.
func (ts *transfers) bulkFreeLocked(h string, t *openTransfer) bool {
	if ts.open[h] != t {
		return false
	}
	if t.bulk != nil {
		select {
		case <-t.bulk.done:
		default:
			return false
		}
	}
	return true
}

// take removes h and returns its transfer, for a commit, close or abort.
func (ts *transfers) take(h string) (*openTransfer, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.open[h]
	if !ok {
		return nil, ts.missing(h)
	}
	t.timer.Stop()
	delete(ts.open, h)
	return t, nil
}

// missing is the error for a handle that is not open: why the owner's
// switches ended it, or not found.
func (ts *transfers) missing(h string) error {
	if err := ts.gone.why(h); err != nil {
		return err
	}
	if r := handleRun(h); r != "" && r != ts.run {
		return wire.Errorf(wire.CodeNotFound, "", "no open transfer %q: the agent restarted since it was opened, and it was lost", h)
	}
	return wire.Errorf(wire.CodeNotFound, "", "no open transfer %q (finished, or idle for over %s)", h, ts.idle)
}

// endWhere ends the transfers v refuses, remembering why, and returns
// how many.
func (ts *transfers) endWhere(v verdict) int {
	ts.mu.Lock()
	var cut []*openTransfer
	for h, t := range ts.open {
		if err := v(t.tag); err != nil {
			delete(ts.open, h)
			ts.gone.note(h, err)
			cut = append(cut, t)
		}
	}
	ts.mu.Unlock()
	for _, t := range cut {
		t.timer.Stop()
		t.end()
	}
	return len(cut)
}

// expire ends t if it is still h's transfer.
func (ts *transfers) expire(h string, t *openTransfer) {
	ts.mu.Lock()
	if ts.open[h] != t {
		ts.mu.Unlock()
		return
	}
	delete(ts.open, h)
	ts.mu.Unlock()
	t.end()
}

// len is the number of open transfers.
func (ts *transfers) len() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.open)
}

// close ends every transfer; later adds fail. It is idempotent.
func (ts *transfers) close() {
	ts.mu.Lock()
	ts.closed = true
	open := ts.open
	ts.open = map[string]*openTransfer{}
	ts.mu.Unlock()
	for _, t := range open {
		t.timer.Stop()
		t.end()
	}
}

// open opens a file, reads its first Length bytes, and keeps it open under
// a handle when more remains.
func (fo *fileOps) open(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsOpenRequest](req)
	if err != nil {
		return nil, err
	}
	file, e, err := fo.fs.Open(body.Path)
	if err != nil {
		return nil, err
	}
	if fo.opened != nil {
		if err := fo.opened(file, body.Path); err != nil {
			file.Close()
			return nil, err
		}
	}
	data, err := readAt(file, 0, min(body.Length, e.Size), e.Path)
	if err != nil {
		file.Close()
		return nil, err
	}
	res := &wire.FsOpenResult{Entry: wireEntry(e), Data: data}
	if int64(len(data)) >= e.Size {
		file.Close()
		return res, nil
	}
	res.Handle, err = fo.transfers.add(&openTransfer{file: file, size: e.Size, tag: handleTag(req.Op, body.Path)})
	return res, err
}

// readAt reads n bytes at off of file; fewer only at its end.
func readAt(file *os.File, off, n int64, name string) ([]byte, error) {
	buf := make([]byte, n)
	got, err := file.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, wire.Errorf(wire.CodeInternal, "", "read %s: %v", name, err)
	}
	return buf[:got], nil
}

// read reads a chunk of a download into a pooled buffer, given back by
// the release it returns once the reply is encoded.
func (fo *fileOps) read(_ context.Context, req *wire.Request) (any, func(), error) {
	body, err := decode[wire.FsReadRequest](req)
	if err != nil {
		return nil, nil, err
	}
	t, err := fo.transfers.get(body.Handle)
	if err != nil {
		return nil, nil, err
	}
	if t.file == nil {
		return nil, nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is an upload", body.Handle)
	}
	n := max(min(body.Length, t.size-body.Offset), 0)
	buf := readReplyBufs.Get().(*[]byte)
	if int64(len(*buf)) < wire.Headroom+n {
		*buf = wire.NewInPlaceBuf(int(n))
	}
	got, err := t.file.ReadAt((*buf)[wire.Headroom:wire.Headroom+n], body.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		readReplyBufs.Put(buf)
		return nil, nil, wire.Errorf(wire.CodeInternal, "", "read %s: %v", body.Handle, err)
	}
	// The reply is encoded around the data, in the pooled buffer, which goes
	// back to the pool once the reply was sent.
	return &wire.InPlace{Body: &wire.FsReadResult{}, Buf: *buf, N: got}, func() { readReplyBufs.Put(buf) }, nil
}

// closeHandle ends a transfer: a download's close, an upload's abort (its
// temporary file is removed).
func (fo *fileOps) closeHandle(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsHandleRequest](req)
	if err != nil {
		return nil, err
	}
	t, err := fo.transfers.take(body.Handle)
	if err != nil {
		return nil, err
	}
	t.end()
	return struct{}{}, nil
}

func (fo *fileOps) write(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsWriteRequest](req)
	if err != nil {
		return nil, err
	}
	u, err := fo.fs.BeginWrite(body.Path, writeOptions(body.FsWriteOptions))
	if err != nil {
		return nil, err
	}
	if _, err := u.WriteAt(body.Data, 0); err != nil {
		u.Abort()
		return nil, err
	}
	res, err := u.Commit()
	if err != nil {
		return nil, err
	}
	return wireWrite(res), nil
}

func (fo *fileOps) uploadBegin(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsUploadBeginRequest](req)
	if err != nil {
		return nil, err
	}
	u, err := fo.fs.BeginWrite(body.Path, writeOptions(body.FsWriteOptions))
	if err != nil {
		return nil, err
	}
	h, err := fo.transfers.add(&openTransfer{upload: u, tag: handleTag(req.Op, body.Path)})
	if err != nil {
		return nil, err
	}
	return &wire.FsUploadBeginResult{Handle: h}, nil
}

// upload returns the upload of handle h.
func (fo *fileOps) upload(h string) (*files.Upload, error) {
	t, err := fo.transfers.get(h)
	if err != nil {
		return nil, err
	}
	if t.upload == nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is a download", h)
	}
	return t.upload, nil
}

// readReplyBufs are the in-place buffers (wire.InPlace) fs.read replies are
// read and encoded in: reused, their pages stay mapped, where fresh ones
// cost a page fault every 4 KiB.
var readReplyBufs = sync.Pool{New: func() any { b := wire.NewInPlaceBuf(wire.MaxChunk); return &b }}

// uploadChunk writes a chunk straight from the request that carried it.
func (fo *fileOps) uploadChunk(_ context.Context, req *wire.Request) (any, error) {
	body := &wire.FsUploadChunkRequest{}
	data, err := req.DecodeBodyAliasing("data", body)
	if err != nil {
		return nil, err
	}
	body.Data = data
	if err := body.Validate(); err != nil {
		return nil, err
	}
	u, err := fo.upload(body.Handle)
	if err != nil {
		return nil, err
	}
	// The data aliases the request, which nothing reuses: the upload may
	// keep it until it is hashed.
	if _, err := u.WriteAtRetained(body.Data, body.Offset); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

func (fo *fileOps) uploadCommit(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsUploadCommitRequest](req)
	if err != nil {
		return nil, err
	}
	t, err := fo.transfers.take(body.Handle)
	if err != nil {
		return nil, err
	}
	if t.upload == nil {
		t.end()
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is a download", body.Handle)
	}
	if j := t.bulk; j != nil {
		// The bytes of a bulk connection: all written before the check.
		select {
		case <-j.done:
		case <-ctx.Done():
			t.end()
			return nil, wire.Errorf(wire.CodeDeadlineExceeded, "", "upload %s: the bulk connection did not end in time", body.Handle)
		}
		if j.err != nil {
			t.end()
			return nil, wire.Errorf(wire.CodeUnavailable, "", "upload %s: bulk connection: %v", body.Handle, j.err)
		}
	}
	if body.CRC32C != nil && (t.bulk == nil || t.bulk.crc != *body.CRC32C || t.bulk.n != body.Size) {
		t.end()
		return nil, wire.Errorf(wire.CodeInvalidArgument, wire.ReasonChecksumMismatch,
			"upload %s: what came on the bulk connection is not what the control plane sent (CRC-32C or size)", body.Handle)
	}
	res, err := t.upload.CommitVerified(body.Size, body.SHA256)
	if err != nil {
		return nil, err
	}
	return wireWrite(res), nil
}
