package agenttest

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"sync"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Handlers keyed by the public operation: a test says what exec, reading a
// file or git status answer, typed, and the mock speaks the wire for it
// (envelopes, chunked transfers, handles).

// validator is a request body that checks itself, as every wire body does.
type validator interface{ Validate() error }

// On serves op with f: the request body is decoded into a Req and, when
// Req has a Validate method, validated, as the real agent does at its trust
// boundary; f's result is the reply. Use it for any one-message op (exec,
// git.status, git.log, fs.stat, proc.list …); see HandleReadFile and
// HandleWriteFile for the ops that move files in chunks.
func On[Req, Res any](m *Agent, op string, f func(req *Req) (*Res, error)) {
	m.Handle(op, func(r *wire.Request) (any, error) {
		body := new(Req)
		if err := r.DecodeBody(body); err != nil {
			return nil, err
		}
		if v, ok := any(body).(validator); ok {
			if err := v.Validate(); err != nil {
				return nil, err
			}
		}
		return f(body)
	})
}

// HandleExec serves exec with f, which sees the request with its defaults
// applied (wire.ExecRequest.Normalize) as the real agent's runner does.
func (m *Agent) HandleExec(f func(req *wire.ExecRequest) (*wire.ExecResult, error)) {
	On(m, wire.OpExec, func(req *wire.ExecRequest) (*wire.ExecResult, error) {
		if err := req.Normalize(0); err != nil {
			return nil, err
		}
		return f(req)
	})
}

// HandleReadFile serves the download of a file (fs.open, fs.read,
// fs.close): read returns the whole content of path, or an error such as
// wire.Errorf(wire.CodeNotFound, …). Large contents go out in the ranges
// the caller asks for, as from a real agent.
func (m *Agent) HandleReadFile(read func(path string) ([]byte, error)) {
	var (
		mu   sync.Mutex
		open = map[string][]byte{}
	)
	On(m, wire.OpFsOpen, func(req *wire.FsOpenRequest) (*wire.FsOpenResult, error) {
		data, err := read(req.Path)
		if err != nil {
			return nil, err
		}
		res := &wire.FsOpenResult{Entry: fileEntry(req.Path, int64(len(data)))}
		if int64(len(data)) <= req.Length {
			res.Data = data
			return res, nil
		}
		res.Data, res.Handle = data[:req.Length], wire.NewID()
		mu.Lock()
		open[res.Handle] = data
		mu.Unlock()
		return res, nil
	})
	On(m, wire.OpFsRead, func(req *wire.FsReadRequest) (*wire.FsReadResult, error) {
		mu.Lock()
		data, ok := open[req.Handle]
		mu.Unlock()
		if !ok {
			return nil, wire.Errorf(wire.CodeNotFound, "", "agenttest: no open file %q", req.Handle)
		}
		off := min(req.Offset, int64(len(data)))
		return &wire.FsReadResult{Data: data[off:min(off+req.Length, int64(len(data)))]}, nil
	})
	On(m, wire.OpFsClose, func(req *wire.FsHandleRequest) (*struct{}, error) {
		mu.Lock()
		delete(open, req.Handle)
		mu.Unlock()
		return &struct{}{}, nil
	})
}

// HandleWriteFile serves the upload of a file (fs.write, or
// fs.upload.begin, chunks and commit): write gets the whole content once
// every chunk arrived and the size checks out; its error fails the upload.
func (m *Agent) HandleWriteFile(write func(path string, data []byte) error) {
	var (
		mu      sync.Mutex
		uploads = map[string]*upload{}
	)
	done := func(path string, data []byte) (*wire.FsWriteResult, error) {
		if err := write(path, data); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		return &wire.FsWriteResult{Path: path, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
	}
	On(m, wire.OpFsWrite, func(req *wire.FsWriteRequest) (*wire.FsWriteResult, error) {
		return done(req.Path, append([]byte(nil), req.Data...))
	})
	On(m, wire.OpFsUploadBegin, func(req *wire.FsUploadBeginRequest) (*wire.FsUploadBeginResult, error) {
		h := wire.NewID()
		mu.Lock()
		uploads[h] = &upload{path: req.Path}
		mu.Unlock()
		return &wire.FsUploadBeginResult{Handle: h}, nil
	})
	take := func(h string, remove bool) (*upload, error) {
		mu.Lock()
		defer mu.Unlock()
		u, ok := uploads[h]
		if !ok {
			return nil, wire.Errorf(wire.CodeNotFound, "", "agenttest: no upload %q", h)
		}
		if remove {
			delete(uploads, h)
		}
		return u, nil
	}
	On(m, wire.OpFsUploadChunk, func(req *wire.FsUploadChunkRequest) (*struct{}, error) {
		u, err := take(req.Handle, false)
		if err != nil {
			return nil, err
		}
		u.write(req.Offset, req.Data)
		return &struct{}{}, nil
	})
	On(m, wire.OpFsUploadCommit, func(req *wire.FsUploadCommitRequest) (*wire.FsWriteResult, error) {
		u, err := take(req.Handle, true)
		if err != nil {
			return nil, err
		}
		data := u.bytes()
		if int64(len(data)) != req.Size {
			return nil, wire.Errorf(wire.CodeInvalidArgument, wire.ReasonChecksumMismatch, "agenttest: got %d bytes, want %d", len(data), req.Size)
		}
		return done(u.path, data)
	})
	On(m, wire.OpFsUploadAbort, func(req *wire.FsHandleRequest) (*struct{}, error) {
		_, _ = take(req.Handle, true)
		return &struct{}{}, nil
	})
}

// upload is a file being uploaded, its chunks in any order.
type upload struct {
	path string
	mu   sync.Mutex
	data []byte
}

func (u *upload) write(off int64, p []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if end := off + int64(len(p)); end > int64(len(u.data)) {
		u.data = append(u.data, make([]byte, end-int64(len(u.data)))...)
	}
	copy(u.data[off:], p)
}

func (u *upload) bytes() []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.data
}

// fileEntry describes a mock file at p.
func fileEntry(p string, size int64) wire.FileEntry {
	return wire.FileEntry{Name: path.Base(p), Path: p, Type: "file", Size: size, Mode: 0o644, ModTime: time.Now().UTC()}
}
