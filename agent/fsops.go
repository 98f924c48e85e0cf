package agent

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/outposthq/outpost/agent/fs"
	"github.com/outposthq/outpost/agent/git"
	"github.com/outposthq/outpost/wire"
)

// fileOps serves the fs.* and git.* ops on the agent's root.
type fileOps struct {
	fs        *fs.FS
	git       *git.Git
	gitVer    string
	transfers *transfers
}

// registerFiles opens the root and serves the file and git ops. The
// capabilities say "fs", and "git" when a git binary answers.
func (a *Agent) registerFiles() error {
	root, err := fs.New(a.cfg.Root)
	if err != nil {
		return err
	}
	real, err := root.RealRoot()
	if err != nil {
		root.Close()
		return err
	}
	fo := &fileOps{fs: root, git: &git.Git{Ceiling: real}, transfers: newTransfers(DefaultTransferIdle)}
	ctx, cancel := context.WithTimeout(context.Background(), gitProbeTimeout)
	fo.gitVer, _ = fo.git.Version(ctx)
	cancel()
	caps := map[string]bool{"fs": true, "git": fo.gitVer != ""}
	for k, v := range a.cfg.Capabilities {
		caps[k] = v
	}
	a.cfg.Capabilities = caps
	a.files = fo
	for op, h := range map[string]Handler{
		wire.OpFsStat: fo.stat, wire.OpFsList: fo.list,
		wire.OpFsOpen: fo.open, wire.OpFsClose: fo.closeHandle,
		wire.OpFsWrite: fo.write, wire.OpFsUploadBegin: fo.uploadBegin, wire.OpFsUploadChunk: fo.uploadChunk,
		wire.OpFsUploadCommit: fo.uploadCommit, wire.OpFsUploadAbort: fo.closeHandle,
		wire.OpFsMkdir: fo.mkdir, wire.OpFsMove: fo.move, wire.OpFsRemove: fo.remove,
		wire.OpGitStatus: fo.gitStatus, wire.OpGitDiff: fo.gitDiff, wire.OpGitApply: fo.gitApply,
		wire.OpGitCommit: fo.gitCommit, wire.OpGitLog: fo.gitLog,
	} {
		a.Register(op, h)
	}
	for op, h := range fo.gitHandlers() {
		a.Register(op, h)
	}
	a.register(wire.OpFsRead, fo.read)
	return nil
}

// close ends open transfers and releases the root.
func (fo *fileOps) close() {
	fo.transfers.close()
	fo.fs.Close()
}

// decode decodes req's body into v and validates it.
func decode[T any, P interface {
	*T
	Validate() error
}](req *wire.Request) (P, error) {
	v := P(new(T))
	if err := req.DecodeBody(v); err != nil {
		return nil, err
	}
	if err := v.Validate(); err != nil {
		return nil, err
	}
	return v, nil
}

// wireEntry is e on the wire.
func wireEntry(e fs.Entry) wire.FileEntry {
	return wire.FileEntry{Name: e.Name, Path: e.Path, Type: e.Type, Size: e.Size, Mode: e.Mode, ModTime: e.ModTime.UTC(), Link: e.LinkTarget}
}

func (fo *fileOps) stat(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsPathRequest](req)
	if err != nil {
		return nil, err
	}
	return fo.entry(body.Path)
}

func (fo *fileOps) list(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsListRequest](req)
	if err != nil {
		return nil, err
	}
	es, err := fo.fs.List(body.Path, body.Recursive, wire.MaxListEntries)
	if err != nil {
		return nil, err
	}
	out := &wire.FsListResult{Entries: make([]wire.FileEntry, len(es))}
	for i, e := range es {
		out.Entries[i] = wireEntry(e)
	}
	return out, nil
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
	res.Handle, err = fo.transfers.add(&transfer{file: file, size: e.Size})
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
	buf := chunkBufs.Get().(*[]byte)
	if int64(len(*buf)) < wire.Headroom+n {
		*buf = wire.NewInPlaceBuf(int(n))
	}
	got, err := t.file.ReadAt((*buf)[wire.Headroom:wire.Headroom+n], body.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		chunkBufs.Put(buf)
		return nil, nil, wire.Errorf(wire.CodeInternal, "", "read %s: %v", body.Handle, err)
	}
	// The reply is encoded around the data, in the pooled buffer, which goes
	// back to the pool once the reply was sent.
	return &wire.InPlace{Body: &wire.FsReadResult{}, Buf: *buf, N: got}, func() { chunkBufs.Put(buf) }, nil
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

// writeOptions are the fs package's options for o.
func writeOptions(o wire.FsWriteOptions) fs.WriteOptions {
	return fs.WriteOptions{Mode: os.FileMode(o.Mode), Overwrite: o.Overwrite, MkdirParents: o.Parents}
}

func wireWrite(r fs.WriteResult) *wire.FsWriteResult {
	return &wire.FsWriteResult{Path: r.Path, Size: r.Size, SHA256: r.SHA256}
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
	h, err := fo.transfers.add(&transfer{upload: u})
	if err != nil {
		return nil, err
	}
	return &wire.FsUploadBeginResult{Handle: h}, nil
}

// upload returns the upload of handle h.
func (fo *fileOps) upload(h string) (*fs.Upload, error) {
	t, err := fo.transfers.get(h)
	if err != nil {
		return nil, err
	}
	if t.upload == nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "handle %s is a download", h)
	}
	return t.upload, nil
}

// chunkBufs are the in-place buffers (wire.InPlace) fs.read replies are
// read and encoded in: reused, their pages stay mapped, where fresh ones
// cost a page fault every 4 KiB.
var chunkBufs = sync.Pool{New: func() any { b := wire.NewInPlaceBuf(wire.MaxChunk); return &b }}

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
	if _, err := u.WriteAt(body.Data, body.Offset); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

func (fo *fileOps) uploadCommit(_ context.Context, req *wire.Request) (any, error) {
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
	res, err := t.upload.CommitVerified(body.Size, body.SHA256)
	if err != nil {
		return nil, err
	}
	return wireWrite(res), nil
}

func (fo *fileOps) mkdir(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsMkdirRequest](req)
	if err != nil {
		return nil, err
	}
	if err := fo.fs.Mkdir(body.Path, body.Parents); err != nil {
		return nil, err
	}
	return fo.entry(body.Path)
}

func (fo *fileOps) move(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsMoveRequest](req)
	if err != nil {
		return nil, err
	}
	if err := fo.fs.Move(body.From, body.To, body.Overwrite); err != nil {
		return nil, err
	}
	return fo.entry(body.To)
}

// entry describes p: a stat, or the state after a change made it.
func (fo *fileOps) entry(p string) (any, error) {
	e, err := fo.fs.Stat(p)
	if err != nil {
		return nil, err
	}
	we := wireEntry(e)
	return &we, nil
}

func (fo *fileOps) remove(_ context.Context, req *wire.Request) (any, error) {
	body, err := decode[wire.FsRemoveRequest](req)
	if err != nil {
		return nil, err
	}
	if err := fo.fs.Remove(body.Path, body.Recursive); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}
