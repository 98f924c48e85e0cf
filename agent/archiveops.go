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

// errArchiveAborted ends an unpack whose sender went away.
var errArchiveAborted = errors.New("the archive upload was aborted")

// archiveJob is one open tar out (pieces) or unpack in (pw).
type archiveJob struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the worker goroutine has returned
	timer  *time.Timer

	// tar out
	pieces chan []byte
	// unpack in
	mu   sync.Mutex // serializes chunks
	pw   *io.PipeWriter
	next int64
	path string
	res  files.ArchiveResult

	err error // the worker's error, read after done

	tag liveTag // the op that opened it, on which path
}

// stop ends the job's worker and waits for it.
func (j *archiveJob) stop() {
	j.cancel()
	if j.pw != nil {
		j.pw.CloseWithError(errArchiveAborted)
	}
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
	pr, pw := io.Pipe()
	j := &archiveJob{cancel: cancel, done: make(chan struct{}), pw: pw, path: body.Path, tag: handleTag(req.Op, body.Path)}
	go func() {
		defer close(j.done)
		j.res, j.err = as.fs.ExtractArchive(ctx, body.Path, pr, files.DefaultArchiveLimits)
		if j.err != nil {
			pr.CloseWithError(j.err)
		} else {
			pr.Close()
		}
	}()
	h, err := as.add(j)
	if err != nil {
		return nil, err
	}
	return &wire.FsArchiveOpenResult{Handle: h}, nil
}

// chunk feeds the next bytes of the tar stream to the unpack; it returns
// once they were taken, or with the unpack's error.
func (as *archives) chunk(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsUnpackChunkRequest](req)
	if err != nil {
		return nil, err
	}
	j, err := as.get(body.Handle)
	if err != nil {
		return nil, err
	}
	if j.pw == nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is an archive download", body.Handle)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if body.Offset != j.next {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "unpack chunk at %d, expected %d (chunks go in order)", body.Offset, j.next)
	}
	if _, err := j.pw.Write(body.Data); err != nil {
		<-j.done
		if j.err != nil {
			return nil, j.err
		}
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "data after the archive's end")
	}
	j.next += int64(len(body.Data))
	return struct{}{}, nil
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
	if j.pw == nil {
		j.stop()
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is an archive download", body.Handle)
	}
	j.pw.Close()
	<-j.done
	j.cancel()
	if j.err != nil {
		return nil, j.err
	}
	c, _ := files.Clean(j.path)
	return &wire.FsUnpackResult{Path: c, Files: j.res.Files, Dirs: j.res.Dirs, Links: j.res.Links, Bytes: j.res.Bytes}, nil
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
