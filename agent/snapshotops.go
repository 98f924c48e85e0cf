// The agent's half of snapshots: wire/PROTOCOL.md, "Snapshots, step by
// step", describes both halves; controlplane/snapxfer.go is the other.

package agent

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/wire"
)

// snapPageBytes bounds the estimated size of one manifest or lack page,
// well under the smallest max payload NATS is run with (1 MiB).
const snapPageBytes = 512 << 10

// planSumsInline is the most names of lacking chunks a plan's reply
// carries (16 KiB of them). The reply of a mutation is kept for retries
// (idempotency), so a longer list is paged out by snap.restore.lack.
const planSumsInline = 512

// restoreJob is one restore: its manifest while it arrives, then the
// restore itself. Its survey, a listing of the directory taken while the
// manifest is on its way, is its own: stopped once planned or aborted.
type restoreJob struct {
	path    string
	opts    files.RestoreOptions
	mu      sync.Mutex
	entries []files.SnapEntry
	r       *files.Restore
}

func (j *restoreJob) abort() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.opts.Survey != nil {
		j.opts.Survey.Stop()
		j.opts.Survey = nil
	}
	if j.r != nil {
		j.r.Abort()
	}
}

// holdsFence reports whether op writes a restore (begin plans none, but a
// restore's every step carries the same session and epoch): such a request
// from a session holds its fence while it runs (delivery.AdmitHeld), so a
// restore a carry began at one epoch never writes over what a request at a
// newer epoch wrote. Abort is not held: it only discards the restore's own
// temporary files (a carry sends it outside the session, so that it passes
// a raised fence).
func holdsFence(op string) bool {
	switch op {
	case wire.OpSnapRestoreBegin, wire.OpSnapRestoreManifest, wire.OpSnapRestoreChunks, wire.OpSnapRestoreCommit:
		return true
	}
	return false
}

// registerSnapshots serves the snap.* ops.
func (fo *fileOps) registerSnapshots(a *Agent) {
	for op, h := range map[string]Handler{
		wire.OpSnapScan: fo.snapScan, wire.OpSnapManifest: fo.snapManifest,
		wire.OpSnapClose:        fo.closeHandle,
		wire.OpSnapRestoreBegin: fo.restoreBegin, wire.OpSnapRestoreManifest: fo.restoreManifest,
		wire.OpSnapRestoreLack: fo.restoreLack, wire.OpSnapRestoreChunks: fo.restoreChunks,
		wire.OpSnapRestoreCommit: fo.restoreCommit, wire.OpSnapRestoreAbort: fo.closeHandle,
	} {
		a.Register(op, h)
	}
	a.register(wire.OpSnapRead, fo.snapRead)
}

func (fo *fileOps) snapScan(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.SnapScanRequest](req)
	if err != nil {
		return nil, err
	}
	s, err := fo.fs.Scan(ctx, body.Path, files.ScanOptions{Exclude: body.Exclude, Gitignore: body.Gitignore})
	if err != nil {
		return nil, err
	}
	h, err := fo.transfers.add(&openTransfer{scan: s, tag: handleTag(req.Op, body.Path)})
	if err != nil {
		return nil, err
	}
	return &wire.SnapScanResult{Handle: h, Entries: len(s.Entries), Files: s.Files, Bytes: s.Bytes, Pages: manifestPages(s.Entries)}, nil
}

// manifestPages is where each page of a manifest after the first begins
// (SnapScanResult.Pages): the control plane asks for them at once.
func manifestPages(entries []files.SnapEntry) []int {
	var out []int
	for off := pageEnd(entries, 0); off < len(entries); off = pageEnd(entries, off) {
		out = append(out, off)
	}
	return out
}

// pageEnd is where the manifest page from off ends: about snapPageBytes
// of entries (as the wire encodes them), at most wire.MaxSnapEntries, at
// least one.
func pageEnd(entries []files.SnapEntry, off int) int {
	size, i := 0, off
	for ; i < len(entries) && size < snapPageBytes && i-off < wire.MaxSnapEntries; i++ {
		e := &entries[i]
		size += len(e.Path) + len(e.Link) + (wire.SumSize+5)*len(e.Chunks) + 32
	}
	return i
}

// scanOf returns the scan of handle h.
func (fo *fileOps) scanOf(h string) (*files.Scan, error) {
	t, err := fo.transfers.get(h)
	if err != nil {
		return nil, err
	}
	if t.scan == nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is not a snapshot scan", h)
	}
	return t.scan, nil
}

func (fo *fileOps) snapManifest(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.SnapPageRequest](req)
	if err != nil {
		return nil, err
	}
	s, err := fo.scanOf(body.Handle)
	if err != nil {
		return nil, err
	}
	out := &wire.SnapManifestPage{Next: body.Offset}
	if body.Offset < len(s.Entries) {
		out.Next = pageEnd(s.Entries, body.Offset)
		out.Entries = make([]wire.SnapEntry, 0, out.Next-body.Offset)
		for i := body.Offset; i < out.Next; i++ {
			out.Entries = append(out.Entries, wireSnapEntry(&s.Entries[i]))
		}
	}
	return out, nil
}

// snapRead reads chunks into a pooled buffer and encodes the reply
// around them (wire.InPlace); release gives the buffer back once the
// reply was sent.
func (fo *fileOps) snapRead(ctx context.Context, req *wire.Request) (any, func(), error) {
	body, err := decode[wire.SnapReadRequest](req)
	if err != nil {
		return nil, nil, err
	}
	s, err := fo.scanOf(body.Handle)
	if err != nil {
		return nil, nil, err
	}
	sums := chunkSums(body.Sums)
	if body.Ticket != "" {
		if err := fo.snapSend(ctx, s, sums, body.Ticket); err != nil {
			return nil, nil, err
		}
		return &wire.SnapReadResult{}, nil, nil
	}
	buf := chunkBuf()
	release := func() { readReplyBufs.Put(buf) }
	data, err := s.ReadChunks((*buf)[wire.Headroom:wire.Headroom], sums, wire.MaxChunk)
	if err != nil {
		release()
		return nil, nil, err
	}
	return &wire.InPlace{Body: &wire.SnapReadResult{}, Buf: *buf, N: len(data)}, release, nil
}

// snapSend writes the content of chunks sums of scan s on a bulk
// connection made with ticket, one after the other, and closes it: with
// sendfile on a plain TCP connection (no copy through the agent), else
// read and written in pieces, gathered under TLS. The control plane checks
// each chunk against its name, as over NATS.
func (fo *fileOps) snapSend(ctx context.Context, s *files.Scan, sums []files.Sum, ticket string) error {
	total, err := s.ChunkBytes(sums)
	if err != nil {
		return err
	}
	if total > wire.MaxSnapBulk {
		return wire.Errorf(wire.CodePayloadTooLarge, "", "%d bytes of chunks asked for on one bulk connection, at most %d", total, wire.MaxSnapBulk)
	}
	conn, _, err := fo.bulk.dial(ctx, ticket)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	return s.SendChunks(sums, func(_ string, f *os.File, off, n int64) error {
		// In pieces, each with its own write deadline: a run is up to
		// MaxSnapBulk bytes, which a slow link takes longer than
		// bulkIdle to carry.
		_, err := sendRange(conn, f, off, n, func() {})
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			// sendfile's error is most often the connection's (a
			// file that shrank ends it short, with none).
			return bulkBroke(err)
		}
		return err
	})
}

// bulkBroke is the error of a bulk connection that broke under a write
// (or restoreBulk's read): unavailable, so that the control plane reads
// the rest over NATS, as for a connection that never came.
func bulkBroke(err error) error {
	return wire.Errorf(wire.CodeUnavailable, "", "bulk connection: %v", err)
}

func (fo *fileOps) restoreBegin(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.SnapRestoreBeginRequest](req)
	if err != nil {
		return nil, err
	}
	if _, err := files.Clean(body.Path); err != nil {
		return nil, err
	}
	// What the directory holds is listed while the manifest comes (a
	// carry begins the restore before it scans the other side).
	sv := fo.fs.StartSurvey(body.Path)
	h, err := fo.transfers.add(&openTransfer{restore: &restoreJob{path: body.Path, opts: files.RestoreOptions{Delete: body.Delete, Survey: sv}}, tag: handleTag(req.Op, body.Path)})
	if err != nil {
		sv.Stop()
		return nil, err
	}
	return &wire.FsUploadBeginResult{Handle: h}, nil
}

// restoreOf returns the restore of handle h.
func (fo *fileOps) restoreOf(h string) (*restoreJob, error) {
	t, err := fo.transfers.get(h)
	if err != nil {
		return nil, err
	}
	if t.restore == nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is not a restore", h)
	}
	return t.restore, nil
}

func (fo *fileOps) restoreManifest(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.SnapRestoreManifestRequest](req)
	if err != nil {
		return nil, err
	}
	j, err := fo.restoreOf(body.Handle)
	if err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.r != nil {
		return nil, wire.Errorf(wire.CodeConflict, "", "restore %s: the manifest is complete", body.Handle)
	}
	if len(j.entries)+len(body.Entries) > files.DefaultArchiveLimits.MaxEntries {
		return nil, wire.Errorf(wire.CodePayloadTooLarge, "", "a manifest of more than %d entries", files.DefaultArchiveLimits.MaxEntries)
	}
	for i := range body.Entries {
		j.entries = append(j.entries, filesSnapEntry(&body.Entries[i]))
	}
	if !body.Last {
		return &wire.SnapRestorePlan{}, nil
	}
	r, err := fo.fs.BeginRestore(ctx, j.path, j.entries, j.opts)
	if j.opts.Survey != nil {
		j.opts.Survey.Stop()
		j.opts.Survey = nil
	}
	if err != nil {
		return nil, err
	}
	j.r = r
	lack := r.Lack()
	plan := &wire.SnapRestorePlan{Lack: len(lack), Write: r.Files()}
	if len(lack) <= planSumsInline {
		// A short list comes with the plan: one round trip fewer
		// before the chunks move (an incremental carry's usual case).
		plan.Sums = make([]byte, 0, len(lack)*wire.SumSize)
		for _, s := range lack {
			plan.Sums = append(plan.Sums, s[:]...)
		}
	}
	return plan, nil
}

// planned returns the restore of h once its manifest is complete.
func (fo *fileOps) planned(h string) (*files.Restore, error) {
	j, err := fo.restoreOf(h)
	if err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.r == nil {
		return nil, wire.Errorf(wire.CodeConflict, "", "restore %s: the manifest is not complete", h)
	}
	return j.r, nil
}

func (fo *fileOps) restoreLack(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.SnapPageRequest](req)
	if err != nil {
		return nil, err
	}
	r, err := fo.planned(body.Handle)
	if err != nil {
		return nil, err
	}
	lack := r.Lack()
	end := min(len(lack), body.Offset+snapPageBytes/wire.SumSize)
	out := &wire.SnapLackPage{Next: max(end, body.Offset)}
	for _, s := range lack[min(body.Offset, end):end] {
		out.Sums = append(out.Sums, s[:]...)
	}
	return out, nil
}

// restoreChunks writes chunks straight from the request that carried them,
// or from its bulk connection (restoreBulk).
func (fo *fileOps) restoreChunks(ctx context.Context, req *wire.Request) (any, error) {
	body := &wire.SnapRestoreChunksRequest{}
	data, err := req.DecodeBodyAliasing("data", body)
	if err != nil {
		return nil, err
	}
	body.Data = data
	if err := body.Validate(); err != nil {
		return nil, err
	}
	r, err := fo.planned(body.Handle)
	if err != nil {
		return nil, err
	}
	if body.Ticket != "" {
		return struct{}{}, fo.restoreBulk(ctx, r, body)
	}
	if err := putChunks(ctx, r.PutAll, chunkSums(body.Sums), body.Sizes, body.Data); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// putChunks writes chunks sums (sizes, one after the other in data, as
// validated) with put (a restore's PutAll) in calls of bulkPutMax chunks
// at most, as restoreBulk does, on up to putWorkers goroutines (the
// restore writes different files at once: on ext4 making each file is
// most of a small file's cost, and a change's files are many and small);
// none is written once ctx has ended (PutAlls under way finish), so a
// request at a newer epoch does not wait for a whole batch of small
// files. The first error is returned once every worker has stopped.
func putChunks(ctx context.Context, put func([]files.Sum, []uint32, []byte) error, sums []files.Sum, sizes []uint32, data []byte) error {
	type group struct{ i, j, off, end int }
	var groups []group
	off := 0
	for i := 0; i < len(sums); {
		j, end := i, off
		for j < len(sums) && j-i < bulkPutMax {
			end += int(sizes[j])
			j++
		}
		groups = append(groups, group{i, j, off, end})
		i, off = j, end
	}
	var (
		mu   sync.Mutex
		next int
		err  error
	)
	// take hands out the next group, none after an error or once ctx
	// has ended.
	take := func(failed error) (group, bool) {
		mu.Lock()
		defer mu.Unlock()
		if failed != nil && err == nil {
			err = failed
		}
		if err == nil {
			err = context.Cause(ctx)
		}
		if err != nil || next == len(groups) {
			return group{}, false
		}
		next++
		return groups[next-1], true
	}
	work := func() {
		var failed error
		for {
			g, ok := take(failed)
			if !ok {
				return
			}
			failed = put(sums[g.i:g.j], sizes[g.i:g.j], data[g.off:g.end])
		}
	}
	var wg sync.WaitGroup
	for range min(putWorkers, len(groups)) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
	return err
}

// putWorkers is how many goroutines putChunks writes a batch's chunks on.
var putWorkers = min(2, runtime.GOMAXPROCS(0))

// chunkBuf is a buffer of readReplyBufs with room for wire.MaxChunk bytes
// after wire.Headroom; it goes back with readReplyBufs.Put.
func chunkBuf() *[]byte {
	buf := readReplyBufs.Get().(*[]byte)
	if len(*buf) < wire.Headroom+wire.MaxChunk {
		*buf = wire.NewInPlaceBuf(wire.MaxChunk)
	}
	return buf
}

// chunkSums is the names of a request's chunks (validated: a multiple of
// wire.SumSize bytes).
func chunkSums(b []byte) []files.Sum {
	sums := make([]files.Sum, len(b)/wire.SumSize)
	for i := range sums {
		sums[i] = files.Sum(b[i*wire.SumSize : (i+1)*wire.SumSize])
	}
	return sums
}

// restoreBulk reads the chunks of body (sizes and names) from a bulk
// connection made with its ticket and writes them into the restore as
// they are whole: after each read, every chunk it completed, in PutAlls
// of bulkPutMax chunks at most (chunks that continue each other in a file
// are one write). It runs in the request's handler, under the request's
// admission: a request at a newer epoch of the session ends ctx, which
// closes the connection; no chunk is written once ctx has ended (a PutAll
// under way, of bulkPutMax chunks at most, finishes), and that request
// runs only after this one returned (delivery.AdmitHeld).
func (fo *fileOps) restoreBulk(ctx context.Context, r *files.Restore, body *wire.SnapRestoreChunksRequest) error {
	conn, rd, err := fo.bulk.dial(ctx, body.Ticket)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	bp := chunkBuf()
	defer readReplyBufs.Put(bp)
	buf := *bp
	sums := chunkSums(body.Sums)
	// buf[start:fill] is what was read and not written yet; chunks
	// [0, i) are written.
	start, fill := 0, 0
	for i := 0; i < len(body.Sizes); {
		size := int(body.Sizes[i])
		if fill-start < size && (start+size > len(buf) || (start > 0 && len(buf)-fill < bulkReadMin)) {
			// What is left of a chunk moves to the front: the next
			// chunk fits, and a read has room.
			fill = copy(buf, buf[start:fill])
			start = 0
		}
		for fill-start < size {
			_ = conn.SetReadDeadline(time.Now().Add(bulkIdle))
			m, rerr := rd.Read(buf[fill:])
			fill += m
			if rerr != nil && fill-start < size {
				if err := context.Cause(ctx); err != nil {
					return err
				}
				return bulkBroke(rerr)
			}
		}
		if err := context.Cause(ctx); err != nil {
			return err
		}
		j, end := i, start
		for j < len(body.Sizes) && j-i < bulkPutMax && end+int(body.Sizes[j]) <= fill {
			end += int(body.Sizes[j])
			j++
		}
		if err := r.PutAll(sums[i:j], body.Sizes[i:j], buf[start:end]); err != nil {
			return err
		}
		start, i = end, j
	}
	return nil
}

// bulkReadMin is the least room restoreBulk leaves a read: less, and what
// is left of a chunk moves to the front of its buffer first.
const bulkReadMin = 1 << 20

// bulkPutMax is the most chunks restoreBulk and putChunks write with one
// PutAll, which does not stop when ctx ends: a read (or a request) brings
// megabytes, thousands of small files (seconds of writes), and a request
// at a newer epoch waits for them within its start-by time.
const bulkPutMax = 64

func (fo *fileOps) restoreCommit(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsHandleRequest](req)
	if err != nil {
		return nil, err
	}
	r, err := fo.planned(body.Handle)
	if err != nil {
		return nil, err
	}
	res, err := r.Commit(ctx)
	if t, terr := fo.transfers.take(body.Handle); terr == nil {
		t.end()
	}
	if err != nil {
		return nil, err
	}
	return &wire.SnapRestoreResult{Files: res.Files, Bytes: res.Bytes, Written: res.Written, Removed: res.Removed}, nil
}

// wireSnapEntry is e on the wire.
func wireSnapEntry(e *files.SnapEntry) wire.SnapEntry {
	w := wire.SnapEntry{Path: e.Path, Type: e.Type, Mode: e.Mode, Size: e.Size, MTime: e.ModTime, Link: e.Link}
	if len(e.Chunks) > 0 {
		w.Sums = make([]byte, 0, wire.SumSize*len(e.Chunks))
		w.Sizes = make([]uint32, 0, len(e.Chunks))
		for _, c := range e.Chunks {
			w.Sums = append(w.Sums, c.Sum[:]...)
			w.Sizes = append(w.Sizes, c.Size)
		}
	}
	return w
}

// filesSnapEntry is a validated wire entry for agent/files.
func filesSnapEntry(w *wire.SnapEntry) files.SnapEntry {
	e := files.SnapEntry{Path: w.Path, Type: w.Type, Mode: w.Mode, Size: w.Size, ModTime: w.MTime, Link: w.Link}
	if len(w.Sizes) > 0 {
		e.Chunks = make([]files.Chunk, len(w.Sizes))
		for i, n := range w.Sizes {
			e.Chunks[i] = files.Chunk{Sum: files.Sum(w.Sums[i*wire.SumSize : (i+1)*wire.SumSize]), Size: n}
		}
	}
	return e
}
