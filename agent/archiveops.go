package agent

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/wire"
)

// archivePieces is how many pieces of an outgoing tar the agent makes
// ahead of the reads taking them: memory per archive is at most
// (archivePieces+1) × the piece size.
const archivePieces = 4

// unpackWindow is how many chunks of an unpack the agent takes ahead of
// the unpack (fs.unpack.begin tells the sender): each is answered once it
// is queued, so the sender keeps that many in flight instead of waiting
// for every chunk to be unpacked. Memory per unpack is at most about
// 2 × unpackWindow chunks (the queue, and chunks arriving ahead of a
// missing one).
const unpackWindow = 8

// errArchiveAborted ends an unpack whose sender went away.
var errArchiveAborted = errors.New("the archive upload was aborted")

// archiveJob is one open tar out (pieces) or unpack in (feed).
type archiveJob struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the worker goroutine has returned
	timer  *time.Timer

	// tar out
	pieces chan []byte
	// unpack in
	mu     sync.Mutex       // serializes chunks
	feed   chan []byte      // chunks in order, read by the unpack; nil for a tar out
	fed    bool             // feed is closed (commit)
	next   int64            // offset of the next byte to queue on feed
	ahead  map[int64][]byte // chunks that came before the ones they follow
	unread *feedReader
	path   string
	res    files.ArchiveResult

	err error // the worker's error, read after done

	tag liveTag // the op that opened it, on which path
}

// stop ends the job's worker and waits for it.
func (j *archiveJob) stop() {
	j.cancel()
	<-j.done
}

// archives are the open archive jobs of one agent; each ends on its close,
// commit or abort, after DefaultTransferIdle without a call, or at stop.
type archives struct {
	fs *files.FS

	mu     sync.Mutex
	closed bool
	open   map[string]*archiveJob
	gone   gone // why jobs were ended by the owner's switches
}

func (as *archives) add(j *archiveJob) (string, error) {
	h := "a" + rand.Text()
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.closed {
		go j.stop()
		return "", wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentOffline, "agent is stopping")
	}
	as.open[h] = j
	j.timer = time.AfterFunc(DefaultTransferIdle, func() {
		if j, err := as.take(h); err == nil {
			j.stop()
		}
	})
	return h, nil
}

func (as *archives) get(h string) (*archiveJob, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	j, ok := as.open[h]
	if !ok {
		return nil, as.missing(h)
	}
	j.timer.Reset(DefaultTransferIdle)
	return j, nil
}

func (as *archives) take(h string) (*archiveJob, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	j, ok := as.open[h]
	if !ok {
		return nil, as.missing(h)
	}
	j.timer.Stop()
	delete(as.open, h)
	return j, nil
}

// missing is the error for a handle that is not open: why the owner's
// switches ended it, or not found.
func (as *archives) missing(h string) error {
	if err := as.gone.why(h); err != nil {
		return err
	}
	return wire.Errorf(wire.CodeNotFound, "", "no open archive %q (finished, or idle for over %s)", h, DefaultTransferIdle)
}

// endWhere stops the jobs v refuses (an unpack's partial tree is removed
// as on an abort), remembering why, and returns how many.
func (as *archives) endWhere(v verdict) int {
	as.mu.Lock()
	var cut []*archiveJob
	for h, j := range as.open {
		if err := v(j.tag); err != nil {
			delete(as.open, h)
			as.gone.note(h, err)
			cut = append(cut, j)
		}
	}
	as.mu.Unlock()
	for _, j := range cut {
		j.timer.Stop()
		j.stop()
	}
	return len(cut)
}

// close stops every job; later adds fail.
func (as *archives) close() {
	as.mu.Lock()
	as.closed = true
	open := as.open
	as.open = map[string]*archiveJob{}
	as.mu.Unlock()
	for _, j := range open {
		j.timer.Stop()
		j.stop()
	}
}

// register serves the archive ops on a.
func (as *archives) register(a *Agent) {
	for op, h := range map[string]Handler{
		wire.OpFsArchiveOpen: as.openArchive, wire.OpFsArchiveRead: as.read, wire.OpFsArchiveClose: as.closeArchive,
		wire.OpFsUnpackBegin: as.begin, wire.OpFsUnpackChunk: as.chunk,
		wire.OpFsUnpackCommit: as.commit, wire.OpFsUnpackAbort: as.closeArchive,
	} {
		a.Register(op, h)
	}
}

// openArchive starts writing the tree's tar in pieces, ahead of the reads.
func (as *archives) openArchive(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsArchiveOpenRequest](req)
	if err != nil {
		return nil, err
	}
	e, err := as.fs.Stat(body.Path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &archiveJob{cancel: cancel, done: make(chan struct{}), pieces: make(chan []byte, archivePieces), tag: handleTag(req.Op, body.Path)}
	go func() {
		defer close(j.done)
		defer close(j.pieces)
		pw := &pieceWriter{ctx: ctx, out: j.pieces, size: int(body.Chunk)}
		j.err = as.fs.WriteArchive(ctx, body.Path, pw)
		if j.err == nil {
			j.err = pw.flush()
		}
	}()
	h, err := as.add(j)
	if err != nil {
		return nil, err
	}
	return &wire.FsArchiveOpenResult{Handle: h, Entry: wireEntry(e)}, nil
}

// read returns the next piece, or EOF with the archive's error if it failed.
func (as *archives) read(ctx context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsHandleRequest](req)
	if err != nil {
		return nil, err
	}
	j, err := as.get(body.Handle)
	if err != nil {
		return nil, err
	}
	if j.pieces == nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is an unpack", body.Handle)
	}
	select {
	case p, ok := <-j.pieces:
		if ok {
			return &wire.FsArchiveReadResult{Data: p}, nil
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	<-j.done
	if j.err != nil {
		return nil, j.err
	}
	return &wire.FsArchiveReadResult{EOF: true}, nil
}

// closeArchive ends a tar out, or aborts an unpack (the file being written
// is discarded; files already unpacked stay).
func (as *archives) closeArchive(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsHandleRequest](req)
	if err != nil {
		return nil, err
	}
	j, err := as.take(body.Handle)
	if err != nil {
		return nil, err
	}
	j.stop()
	return struct{}{}, nil
}

// begin starts an unpack fed by the chunks that follow.
func (as *archives) begin(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsUnpackBeginRequest](req)
	if err != nil {
		return nil, err
	}
	if _, err := files.Clean(body.Path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &archiveJob{cancel: cancel, done: make(chan struct{}), feed: make(chan []byte, unpackWindow), path: body.Path, tag: handleTag(req.Op, body.Path)}
	j.unread = &feedReader{ctx: ctx, ch: j.feed}
	go func() {
		defer close(j.done)
		j.res, j.err = as.fs.ExtractArchive(ctx, body.Path, j.unread, files.DefaultArchiveLimits)
	}()
	h, err := as.add(j)
	if err != nil {
		return nil, err
	}
	return &wire.FsArchiveOpenResult{Handle: h, Window: unpackWindow}, nil
}

// chunk queues the next bytes of the tar stream for the unpack and returns
// once they are queued (or with the unpack's error, if it failed). Chunks
// may come out of order, up to the window: one that comes before the
// chunks it follows waits in memory for them.
func (as *archives) chunk(ctx context.Context, req *wire.Request) (any, error) {
	body := &wire.FsUnpackChunkRequest{}
	data, err := req.DecodeBodyAliasing("data", body)
	if err != nil {
		return nil, err
	}
	// The data aliases the request, which nothing reuses: the queue may
	// keep it until the unpack has read it.
	body.Data = data
	if err := body.Validate(); err != nil {
		return nil, err
	}
	j, err := as.get(body.Handle)
	if err != nil {
		return nil, err
	}
	if j.feed == nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is an archive download", body.Handle)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.ended(); err != nil {
		return nil, err
	}
	if _, dup := j.ahead[body.Offset]; dup || body.Offset < j.next || j.fed {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "unpack chunk at %d was sent already (the stream is at %d)", body.Offset, j.next)
	}
	if body.Offset > j.next {
		if len(j.ahead) >= unpackWindow {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "", "unpack chunk at %d: more than %d chunks ahead of %d, which is missing", body.Offset, unpackWindow, j.next)
		}
		if j.ahead == nil {
			j.ahead = map[int64][]byte{}
		}
		j.ahead[body.Offset] = body.Data
		return struct{}{}, nil
	}
	for data := body.Data; ; {
		select {
		case j.feed <- data:
		case <-j.done:
			return nil, j.ended()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		j.next += int64(len(data))
		var ok bool
		if data, ok = j.ahead[j.next]; !ok {
			return struct{}{}, nil
		}
		delete(j.ahead, j.next)
	}
}

// ended is the error for a chunk that comes after the unpack ended: its
// error, or data after the archive's end; nil while it runs.
func (j *archiveJob) ended() error {
	select {
	case <-j.done:
	default:
		return nil
	}
	if j.err != nil {
		return j.err
	}
	return wire.Errorf(wire.CodeInvalidArgument, "", "data after the archive's end")
}

// commit ends the stream and reports the unpack.
func (as *archives) commit(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsHandleRequest](req)
	if err != nil {
		return nil, err
	}
	j, err := as.take(body.Handle)
	if err != nil {
		return nil, err
	}
	if j.feed == nil {
		j.stop()
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is an archive download", body.Handle)
	}
	j.mu.Lock()
	missing := len(j.ahead) > 0
	if !missing {
		j.fed = true
		close(j.feed)
	}
	j.mu.Unlock()
	if missing {
		j.stop()
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "unpack committed with the chunk at %d missing", j.next)
	}
	<-j.done
	j.cancel()
	if j.err != nil {
		return nil, j.err
	}
	if j.unread.left() {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "data after the archive's end")
	}
	c, _ := files.Clean(j.path)
	return &wire.FsUnpackResult{Path: c, Files: j.res.Files, Dirs: j.res.Dirs, Links: j.res.Links, Bytes: j.res.Bytes}, nil
}

// feedReader reads the chunks queued on ch, in order, until ch is closed
// (EOF) or ctx is done (the unpack was aborted).
type feedReader struct {
	ctx context.Context
	ch  <-chan []byte
	cur []byte
}

func (r *feedReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		select {
		case b, ok := <-r.ch:
			if !ok {
				return 0, io.EOF
			}
			r.cur = b
		case <-r.ctx.Done():
			return 0, errArchiveAborted
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// left reports whether bytes were queued that the unpack did not read
// (data after the archive's end); call it after the unpack returned.
func (r *feedReader) left() bool {
	if len(r.cur) > 0 {
		return true
	}
	for b := range r.ch {
		if len(b) > 0 {
			return true
		}
	}
	return false
}

// pieceWriter cuts what is written into pieces of size and sends them.
type pieceWriter struct {
	ctx  context.Context
	out  chan<- []byte
	size int
	buf  []byte
}

func (w *pieceWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if w.buf == nil {
			w.buf = make([]byte, 0, w.size)
		}
		m := min(len(p), w.size-len(w.buf))
		w.buf = append(w.buf, p[:m]...)
		p = p[m:]
		if len(w.buf) == w.size {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// flush sends the piece being filled.
func (w *pieceWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	select {
	case w.out <- w.buf:
		w.buf = nil
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
}
