package agent

import (
	"context"
	"os"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/agent/git"
	"github.com/outposthq/outpost/wire"
)

// fileOps serves the fs.* and git.* ops on the agent's root.
type fileOps struct {
	fs        *files.FS
	realRoot  string // the root's host path, links evaluated
	git       *git.Git
	gitVer    string
	transfers *transfers
	bulk      *bulkDialer // nil: transfers only over NATS
	archives  *archives
	watches   *watches
	// opened, when set, checks a file once open (Agent.checkOpened).
	opened func(f *os.File, given string) error
}

// registerFiles opens the root and serves the file and git ops. The
// capabilities say "fs", and "git" when a git binary answers.
func (a *Agent) registerFiles() error {
	root, err := files.New(a.cfg.Root)
	if err != nil {
		return err
	}
	real, err := root.RealRoot()
	if err != nil {
		root.Close()
		return err
	}
	fo := &fileOps{fs: root, realRoot: real, git: &git.Git{Ceiling: real, Exclude: a.gitExcludes, Guard: a.gitGuard, Overrides: a.gitOverrides}, transfers: newTransfers(DefaultTransferIdle),
		bulk: newBulkDialer(a.cfg.Identity, a.cfg.Proxy)}
	ctx, cancel := context.WithTimeout(context.Background(), gitProbeTimeout)
	fo.gitVer, _ = fo.git.Version(ctx)
	cancel()
	caps := map[string]bool{"fs": true, "git": fo.gitVer != ""}
	for k, v := range a.cfg.Capabilities {
		caps[k] = v
	}
	a.cfg.Capabilities = caps
	a.files = fo
	fo.opened = a.checkOpened
	a.gitConfigs = userGitConfigs(real)
	for op, h := range map[string]Handler{
		wire.OpFsStat: fo.stat, wire.OpFsList: fo.list,
		wire.OpFsOpen: fo.open, wire.OpFsClose: fo.closeHandle,
		wire.OpFsWrite: fo.write, wire.OpFsUploadBegin: fo.uploadBegin, wire.OpFsUploadChunk: fo.uploadChunk,
		wire.OpFsUploadCommit: fo.uploadCommit, wire.OpFsSend: fo.send, wire.OpFsUploadRecv: fo.recv, wire.OpFsUploadAbort: fo.closeHandle,
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
	fo.archives = &archives{fs: root, open: map[string]*archiveJob{}}
	fo.archives.register(a)
	fo.registerSnapshots(a)
	registerSearch(a, root)
	fo.watches = newWatches(root)
	registerWatch(a, fo.watches)
	return nil
}

// close ends open transfers and releases the root.
func (fo *fileOps) close() {
	fo.transfers.close()
	fo.archives.close()
	fo.watches.close()
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
func wireEntry(e files.Entry) wire.FileEntry {
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

// writeOptions are the fs package's options for o.
func writeOptions(o wire.FsWriteOptions) files.WriteOptions {
	return files.WriteOptions{Mode: os.FileMode(o.Mode), Overwrite: o.Overwrite, MkdirParents: o.Parents}
}

func wireWrite(r files.WriteResult) *wire.FsWriteResult {
	return &wire.FsWriteResult{Path: r.Path, Size: r.Size, SHA256: r.SHA256}
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
