package wire

// Archive ops: whole trees as tar streams (API.md's fs/archive). Out: open
// starts a tar of the tree on the agent, reads take its next piece in
// order, close ends it. In: begin starts an unpack, chunks carry the tar
// stream in order, commit waits for the unpack's end and reports it, abort
// stops it. Each is sequential, so none may be replayed: they are all
// mutations to the router.
const (
	OpFsArchiveOpen  = "fs.archive.open"
	OpFsArchiveRead  = "fs.archive.read"
	OpFsArchiveClose = "fs.archive.close"
	OpFsUnpackBegin  = "fs.unpack.begin"
	OpFsUnpackChunk  = "fs.unpack.chunk"
	OpFsUnpackCommit = "fs.unpack.commit"
	OpFsUnpackAbort  = "fs.unpack.abort"
)

func init() {
	for _, op := range []string{OpFsArchiveOpen, OpFsArchiveRead, OpFsArchiveClose,
		OpFsUnpackBegin, OpFsUnpackChunk, OpFsUnpackCommit, OpFsUnpackAbort} {
		RegisterOp(op, OpInfo{Mutates: true})
	}
}

// FsArchiveOpenRequest is the body of fs.archive.open: the tree at Path,
// in pieces of up to Chunk bytes.
type FsArchiveOpenRequest struct {
	Path  string `msgpack:"path"`
	Chunk int64  `msgpack:"chunk"`
}

// Validate checks the path and the piece size.
func (r *FsArchiveOpenRequest) Validate() error {
	if err := validPath("path", r.Path); err != nil {
		return err
	}
	if r.Chunk <= 0 {
		return Errorf(CodeInvalidArgument, "", "chunk must be 1 to %d", MaxChunk)
	}
	return validLength(r.Chunk)
}

// FsArchiveOpenResult names the open archive; Entry is the tree's root
// (fs.archive.open). From fs.unpack.begin, Window is how many chunks the
// sender may have in flight at once (the agent queues them, and takes
// them out of order within it); 0, from agents before it, means one at a
// time.
type FsArchiveOpenResult struct {
	Handle string    `msgpack:"h"`
	Entry  FileEntry `msgpack:"entry"`
	Window int       `msgpack:"window,omitempty"`
}

// FsArchiveReadResult is the next piece of the tar stream; EOF is true
// once the stream has ended (Data may still hold its last bytes).
type FsArchiveReadResult struct {
	Data []byte `msgpack:"data"`
	EOF  bool   `msgpack:"eof,omitempty"`
}

// FsUnpackBeginRequest is the body of fs.unpack.begin: unpack into the
// directory Path (created when missing).
type FsUnpackBeginRequest struct {
	Path string `msgpack:"path"`
}

// Validate checks the path.
func (r *FsUnpackBeginRequest) Validate() error { return validPath("path", r.Path) }

// FsUnpackChunkRequest is the body of fs.unpack.chunk: the tar stream's
// bytes at Offset, which must be where the previous chunk ended.
type FsUnpackChunkRequest struct {
	Handle string `msgpack:"h"`
	Offset int64  `msgpack:"off"`
	Data   []byte `msgpack:"data"`
}

// Validate checks the handle, offset and size.
func (r *FsUnpackChunkRequest) Validate() error { return validChunk(r.Handle, r.Offset, r.Data) }

func (r *FsUnpackChunkRequest) inPlaceFields() ([]mapField, string) {
	return []mapField{
		{key: "h", kind: kindString, s: r.Handle},
		{key: "off", kind: kindInt64, i: r.Offset},
	}, "data"
}

func (r *FsUnpackChunkRequest) sizeHint() int { return len(r.Data) + envelopeSlack }
func (r *FsArchiveReadResult) sizeHint() int  { return len(r.Data) + envelopeSlack }

// FsUnpackResult is the result of fs.unpack.commit: what was written.
type FsUnpackResult struct {
	Path  string `msgpack:"path"`
	Files int    `msgpack:"files"`
	Dirs  int    `msgpack:"dirs"`
	Links int    `msgpack:"links"`
	Bytes int64  `msgpack:"bytes"`
}
