package wire

import "time"

// File ops. Paths are slash-separated and relative to the agent's root; a
// leading "/" means the root. Large files move in chunks of at most MaxChunk
// bytes: a download opens a handle and reads ranges of it, an upload begins,
// writes chunks by offset (several in flight) and commits with the size and
// SHA-256 of what was sent.
const (
	OpFsStat         = "fs.stat"
	OpFsList         = "fs.list"
	OpFsOpen         = "fs.open"
	OpFsRead         = "fs.read"
	OpFsClose        = "fs.close"
	OpFsWrite        = "fs.write"
	OpFsUploadBegin  = "fs.upload.begin"
	OpFsUploadChunk  = "fs.upload.chunk"
	OpFsUploadCommit = "fs.upload.commit"
	OpFsUploadAbort  = "fs.upload.abort"
	OpFsMkdir        = "fs.mkdir"
	OpFsMove         = "fs.move"
	OpFsRemove       = "fs.remove"
)

func init() {
	for _, op := range []string{OpFsStat, OpFsList, OpFsOpen, OpFsRead, OpFsClose} {
		// Reads; an open or close repeated after a timeout at worst leaves
		// a handle for the idle timeout to close.
		RegisterOp(op, OpInfo{})
	}
	for _, op := range []string{OpFsWrite, OpFsUploadBegin, OpFsUploadChunk, OpFsUploadCommit,
		OpFsUploadAbort, OpFsMkdir, OpFsMove, OpFsRemove} {
		RegisterOp(op, OpInfo{Mutates: true})
	}
}

// File limits.
const (
	// MaxChunk is the most data one fs.read, fs.write or fs.upload.chunk
	// carries. Callers pick chunks well below the connection's max payload.
	MaxChunk = 4 << 20
	// MaxPathLen bounds a path field.
	MaxPathLen = 4096
	// MaxHandleLen bounds a transfer handle.
	MaxHandleLen = 64
	// MaxListEntries bounds one fs.list; a larger listing is
	// payload_too_large rather than cut short.
	MaxListEntries = 50000
)

// FileEntry describes one file, directory or link.
type FileEntry struct {
	Name string `msgpack:"name"`
	// Path is relative to the root, "." for the root itself.
	Path string `msgpack:"path"`
	// Type is "file", "dir", "symlink" or "other".
	Type    string    `msgpack:"type"`
	Size    int64     `msgpack:"size"`
	Mode    uint32    `msgpack:"mode"` // permission bits
	ModTime time.Time `msgpack:"mtime"`
	// Link is a symlink's target as stored.
	Link string `msgpack:"link,omitempty"`
}

// FsPathRequest names one path: the body of fs.stat.
type FsPathRequest struct {
	Path string `msgpack:"path"`
}

// Validate checks the path field.
func (r *FsPathRequest) Validate() error { return validPath("path", r.Path) }

// FsListRequest is the body of fs.list.
type FsListRequest struct {
	Path      string `msgpack:"path"`
	Recursive bool   `msgpack:"rec,omitempty"`
}

// Validate checks the path field.
func (r *FsListRequest) Validate() error { return validPath("path", r.Path) }

// FsListResult is the result of fs.list, sorted by path.
type FsListResult struct {
	Entries []FileEntry `msgpack:"entries"`
}

// FsOpenRequest is the body of fs.open: open a regular file and read up to
// Length bytes from its start. When more of the file remains, the agent keeps
// it open under a handle for fs.read until fs.close or an idle timeout.
// Reading through one open file gives a consistent snapshot even while
// writes replace the file.
type FsOpenRequest struct {
	Path   string `msgpack:"path"`
	Length int64  `msgpack:"len,omitempty"`
}

// Validate checks the path and length.
func (r *FsOpenRequest) Validate() error {
	if err := validPath("path", r.Path); err != nil {
		return err
	}
	return validLength(r.Length)
}

// FsOpenResult is the result of fs.open. Handle is empty when Data holds
// the whole file.
type FsOpenResult struct {
	Handle string    `msgpack:"h,omitempty"`
	Entry  FileEntry `msgpack:"entry"`
	Data   []byte    `msgpack:"data,omitempty"`
}

// FsReadRequest is the body of fs.read: Length bytes at Offset of an open
// handle. Fewer bytes come back only at the end of the file.
type FsReadRequest struct {
	Handle string `msgpack:"h"`
	Offset int64  `msgpack:"off"`
	Length int64  `msgpack:"len"`
}

// Validate checks the handle, offset and length.
func (r *FsReadRequest) Validate() error {
	if err := validHandle(r.Handle); err != nil {
		return err
	}
	if r.Offset < 0 {
		return Errorf(CodeInvalidArgument, "", "negative offset %d", r.Offset)
	}
	return validLength(r.Length)
}

// FsReadResult is the result of fs.read.
type FsReadResult struct {
	Data []byte `msgpack:"data"`
}

// FsHandleRequest names a transfer handle: the body of fs.close and
// fs.upload.abort. An unknown handle is not_found.
type FsHandleRequest struct {
	Handle string `msgpack:"h"`
}

// Validate checks the handle.
func (r *FsHandleRequest) Validate() error { return validHandle(r.Handle) }

// FsWriteOptions say how a file is written.
type FsWriteOptions struct {
	Path string `msgpack:"path"`
	// Mode holds permission bits; 0 keeps an existing file's mode (0644
	// for a new one).
	Mode      uint32 `msgpack:"mode,omitempty"`
	Overwrite bool   `msgpack:"ow,omitempty"`
	// Parents creates missing parent directories.
	Parents bool `msgpack:"parents,omitempty"`
}

// Validate checks the path and mode.
func (o *FsWriteOptions) Validate() error {
	if err := validPath("path", o.Path); err != nil {
		return err
	}
	if o.Mode&^0o777 != 0 {
		return Errorf(CodeInvalidArgument, "", "mode %#o has bits beyond 0777", o.Mode)
	}
	return nil
}

// FsWriteRequest is the body of fs.write: a whole small file at once.
type FsWriteRequest struct {
	FsWriteOptions `msgpack:",inline"`
	Data           []byte `msgpack:"data,omitempty"`
}

// Validate checks the options and the size.
func (r *FsWriteRequest) Validate() error {
	if len(r.Data) > MaxChunk {
		return Errorf(CodePayloadTooLarge, "", "fs.write carries at most %d bytes; upload in chunks", MaxChunk)
	}
	return r.FsWriteOptions.Validate()
}

// FsWriteResult is the result of fs.write and fs.upload.commit.
type FsWriteResult struct {
	Path   string `msgpack:"path"`
	Size   int64  `msgpack:"size"`
	SHA256 string `msgpack:"sha256"`
}

// FsUploadBeginRequest is the body of fs.upload.begin. An existing file
// without Overwrite is conflict/already_exists now, and again at commit.
type FsUploadBeginRequest struct {
	FsWriteOptions `msgpack:",inline"`
}

// Validate checks the options.
func (r *FsUploadBeginRequest) Validate() error { return r.FsWriteOptions.Validate() }

// FsUploadBeginResult names the upload.
type FsUploadBeginResult struct {
	Handle string `msgpack:"h"`
}

// FsUploadChunkRequest is the body of fs.upload.chunk: Data at Offset.
// Chunks may arrive in any order; writing the same chunk twice is harmless.
type FsUploadChunkRequest struct {
	Handle string `msgpack:"h"`
	Offset int64  `msgpack:"off"`
	Data   []byte `msgpack:"data"`
}

// Validate checks the handle, offset and size.
func (r *FsUploadChunkRequest) Validate() error { return validChunk(r.Handle, r.Offset, r.Data) }

// validChunk checks a chunk of an upload or an unpack: a handle, an offset
// that is not negative, at most MaxChunk bytes.
func validChunk(handle string, offset int64, data []byte) error {
	if err := validHandle(handle); err != nil {
		return err
	}
	if offset < 0 {
		return Errorf(CodeInvalidArgument, "", "negative offset %d", offset)
	}
	if len(data) > MaxChunk {
		return Errorf(CodePayloadTooLarge, "", "a chunk carries at most %d bytes", MaxChunk)
	}
	return nil
}

// FsUploadCommitRequest is the body of fs.upload.commit. The agent checks
// that the file it wrote has Size bytes and, when SHA256 is set, that hash;
// when CRC32C is set (an upload whose bytes all came on one bulk
// connection), the CRC-32C (Castagnoli) of what came on it. A mismatch
// aborts the upload (invalid_argument/checksum_mismatch) and the old file
// stays.
type FsUploadCommitRequest struct {
	Handle string  `msgpack:"h"`
	Size   int64   `msgpack:"size"`
	SHA256 string  `msgpack:"sha256,omitempty"`
	CRC32C *uint32 `msgpack:"crc,omitempty"`
}

// Validate checks the handle and size.
func (r *FsUploadCommitRequest) Validate() error {
	if err := validHandle(r.Handle); err != nil {
		return err
	}
	if r.Size < 0 {
		return Errorf(CodeInvalidArgument, "", "negative size %d", r.Size)
	}
	return nil
}

// FsMkdirRequest is the body of fs.mkdir; the result is the directory's
// FileEntry.
type FsMkdirRequest struct {
	Path    string `msgpack:"path"`
	Parents bool   `msgpack:"parents,omitempty"`
}

// Validate checks the path.
func (r *FsMkdirRequest) Validate() error { return validPath("path", r.Path) }

// FsMoveRequest is the body of fs.move; the result is the moved entry's
// FileEntry at To.
type FsMoveRequest struct {
	From      string `msgpack:"from"`
	To        string `msgpack:"to"`
	Overwrite bool   `msgpack:"ow,omitempty"`
}

// Validate checks both paths.
func (r *FsMoveRequest) Validate() error {
	if err := validPath("from", r.From); err != nil {
		return err
	}
	return validPath("to", r.To)
}

// FsRemoveRequest is the body of fs.remove.
type FsRemoveRequest struct {
	Path      string `msgpack:"path"`
	Recursive bool   `msgpack:"rec,omitempty"`
}

// Validate checks the path.
func (r *FsRemoveRequest) Validate() error { return validPath("path", r.Path) }

// validPath checks a path field's length; what it names is the agent's to
// judge (outside_root and so on).
func validPath(field, p string) error {
	if len(p) > MaxPathLen {
		return Errorf(CodeInvalidArgument, "", "%s is longer than %d bytes", field, MaxPathLen)
	}
	return nil
}

func validHandle(h string) error {
	if h == "" || len(h) > MaxHandleLen {
		return Errorf(CodeInvalidArgument, "", "handle must be 1 to %d characters", MaxHandleLen)
	}
	return nil
}

func validLength(n int64) error {
	if n < 0 || n > MaxChunk {
		return Errorf(CodeInvalidArgument, "", "length must be 0 to %d", MaxChunk)
	}
	return nil
}

func (r *FsOpenResult) sizeHint() int         { return len(r.Data) + envelopeSlack }
func (r *FsReadResult) sizeHint() int         { return len(r.Data) + envelopeSlack }
func (r *FsWriteRequest) sizeHint() int       { return len(r.Data) + envelopeSlack }
func (r *FsUploadChunkRequest) sizeHint() int { return len(r.Data) + envelopeSlack }
