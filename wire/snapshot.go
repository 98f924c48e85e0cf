package wire

// Snapshot ops (API.md's Snapshots; wire/PROTOCOL.md "Snapshots, step by
// step"), in the fs area: the owner's fs rule and denyPaths apply to them
// as to every file op. Out: fs.snap.scan walks and chunks a tree and keeps its manifest
// under a handle; snap.manifest pages the manifest out; snap.read returns
// the content of chunks the store lacks; snap.close ends the handle. In:
// snap.restore.begin opens a restore; snap.restore.manifest sends the
// manifest in pages, the last of which makes the agent plan: it hashes
// what it has and keeps the list of chunks it lacks; snap.restore.lack
// pages that list out; snap.restore.chunks delivers chunks; commit
// finishes, abort discards.
const (
	OpSnapScan            = "fs.snap.scan"
	OpSnapManifest        = "fs.snap.manifest"
	OpSnapRead            = "fs.snap.read"
	OpSnapClose           = "fs.snap.close"
	OpSnapRestoreBegin    = "fs.snap.restore.begin"
	OpSnapRestoreManifest = "fs.snap.restore.manifest"
	OpSnapRestoreLack     = "fs.snap.restore.lack"
	OpSnapRestoreChunks   = "fs.snap.restore.chunks"
	OpSnapRestoreCommit   = "fs.snap.restore.commit"
	OpSnapRestoreAbort    = "fs.snap.restore.abort"
)

// Snapshot limits.
const (
	// SumSize is the size of a chunk's name, its SHA-256.
	SumSize = 32
	// MaxSnapChunk bounds one chunk (the chunker's maximum is 256 KiB).
	MaxSnapChunk = 1 << 20
	// MaxSnapEntries bounds one page of a manifest.
	MaxSnapEntries = 100_000
	// MaxSnapSums bounds the chunk names of one request or page.
	MaxSnapSums = 1 << 17
)

func init() {
	for _, op := range []string{OpSnapScan, OpSnapManifest, OpSnapRead, OpSnapClose, OpSnapRestoreLack} {
		RegisterOp(op, OpInfo{})
	}
	for _, op := range []string{OpSnapRestoreBegin, OpSnapRestoreManifest, OpSnapRestoreChunks, OpSnapRestoreCommit, OpSnapRestoreAbort} {
		RegisterOp(op, OpInfo{Mutates: true})
	}
}

// SnapEntry is one entry of a manifest: a file with its chunks, a
// directory, or a symlink with its target.
type SnapEntry struct {
	Path  string `msgpack:"p" json:"p"`
	Type  string `msgpack:"t" json:"t"` // file, dir, symlink
	Mode  uint32 `msgpack:"m" json:"m"`
	Size  int64  `msgpack:"s,omitempty" json:"s,omitempty"`
	MTime int64  `msgpack:"mt,omitempty" json:"mt,omitempty"` // Unix ns
	Link  string `msgpack:"l,omitempty" json:"l,omitempty"`
	// Sums are the chunks' SHA-256s, SumSize bytes each; Sizes their lengths.
	Sums  []byte   `msgpack:"c,omitempty" json:"c,omitempty"`
	Sizes []uint32 `msgpack:"z,omitempty" json:"z,omitempty"`
}

// Validate checks the shape; the agent checks paths and links against
// its root when it restores.
func (e *SnapEntry) Validate() error {
	if e.Path == "" || len(e.Path) > MaxPathLen {
		return Errorf(CodeInvalidArgument, "", "snapshot entry path must be 1 to %d bytes", MaxPathLen)
	}
	if len(e.Sums) != SumSize*len(e.Sizes) {
		return Errorf(CodeInvalidArgument, "", "snapshot entry %q: %d bytes of sums for %d chunks", e.Path, len(e.Sums), len(e.Sizes))
	}
	var total int64
	for _, n := range e.Sizes {
		if n == 0 || n > MaxSnapChunk {
			return Errorf(CodeInvalidArgument, "", "snapshot entry %q: a chunk of %d bytes", e.Path, n)
		}
		total += int64(n)
	}
	if total != e.Size && e.Type == "file" {
		return Errorf(CodeInvalidArgument, "", "snapshot entry %q: chunks of %d bytes for a size of %d", e.Path, total, e.Size)
	}
	return nil
}

func validEntries(es []SnapEntry) error {
	if len(es) > MaxSnapEntries {
		return Errorf(CodePayloadTooLarge, "", "a manifest page holds at most %d entries", MaxSnapEntries)
	}
	for i := range es {
		if err := es[i].Validate(); err != nil {
			return err
		}
	}
	return nil
}

func validSums(sums []byte) error {
	if len(sums)%SumSize != 0 || len(sums)/SumSize > MaxSnapSums {
		return Errorf(CodeInvalidArgument, "", "chunk names are %d bytes each, at most %d of them", SumSize, MaxSnapSums)
	}
	return nil
}

// SnapScanRequest is the body of snap.scan: the directory Path, without
// what Exclude's globs or (with Gitignore) .gitignore files exclude.
type SnapScanRequest struct {
	Path      string   `msgpack:"path"`
	Exclude   []string `msgpack:"ex,omitempty"`
	Gitignore bool     `msgpack:"gi,omitempty"`
}

// Validate checks the path and globs.
func (r *SnapScanRequest) Validate() error {
	if len(r.Exclude) > 1000 {
		return Errorf(CodeInvalidArgument, "", "at most 1000 exclude globs")
	}
	for _, g := range r.Exclude {
		if len(g) > MaxPathLen {
			return Errorf(CodeInvalidArgument, "", "an exclude glob is longer than %d bytes", MaxPathLen)
		}
	}
	return validPath("path", r.Path)
}

// SnapScanResult names the scan: Entries in its manifest, Files regular
// files holding Bytes. Pages, when the agent gives it, is the offset each
// manifest page after the first begins at (snap.manifest answers a page
// from exactly there to the next): the control plane asks for several
// pages at once instead of one after the other. An agent that does not
// give it is paged by each page's Next.
type SnapScanResult struct {
	Handle  string `msgpack:"h"`
	Entries int    `msgpack:"n"`
	Files   int    `msgpack:"files"`
	Bytes   int64  `msgpack:"bytes"`
	Pages   []int  `msgpack:"pg,omitempty"`
}

// SnapPageRequest asks for the page of a handle's list starting at Offset.
type SnapPageRequest struct {
	Handle string `msgpack:"h"`
	Offset int    `msgpack:"off"`
}

// Validate checks the handle and offset.
func (r *SnapPageRequest) Validate() error {
	if r.Offset < 0 {
		return Errorf(CodeInvalidArgument, "", "negative offset %d", r.Offset)
	}
	return validHandle(r.Handle)
}

// SnapManifestPage is entries [Offset, Next) of a scan's manifest; Next
// equals the scan's Entries at the end.
type SnapManifestPage struct {
	Entries []SnapEntry `msgpack:"e"`
	Next    int         `msgpack:"next"`
}

// Validate checks every entry (the control plane decodes it).
func (r *SnapManifestPage) Validate() error { return validEntries(r.Entries) }

// SnapReadRequest asks for the content of chunks of a scan, in order.
// With Ticket, the content goes on a bulk connection made with it
// (wire.BulkPath) instead of in the reply: the agent dials, writes the
// chunks one after the other, closes the connection and then answers with
// an empty SnapReadResult (or the error that stopped it). A batch on a bulk
// connection may hold more than one reply could (MaxSnapBulk).
type SnapReadRequest struct {
	Handle string `msgpack:"h"`
	Sums   []byte `msgpack:"c"`
	Ticket string `msgpack:"tk,omitempty"`
}

// MaxSnapBulk bounds the content of one fs.snap.read on a bulk connection.
const MaxSnapBulk = 64 << 20

// Validate checks the handle, names and ticket.
func (r *SnapReadRequest) Validate() error {
	if err := validHandle(r.Handle); err != nil {
		return err
	}
	if r.Ticket != "" {
		if err := ValidTicket(r.Ticket); err != nil {
			return err
		}
	}
	return validSums(r.Sums)
}

// SnapReadResult is the chunks' content, one after the other.
type SnapReadResult struct {
	Data []byte `msgpack:"data"`
}

func (r *SnapReadResult) sizeHint() int { return len(r.Data) + envelopeSlack }

// A SnapReadResult is encoded in place by the agent (InPlace) and decoded
// with its data aliasing the reply by the control plane, as an
// FsReadResult is: the chunks are not copied again on their way.
func (r *SnapReadResult) inPlaceFields() ([]mapField, string) { return nil, "data" }

func (r *SnapReadResult) decodeAliasing(data []byte) error {
	d, err := UnmarshalAliasing(data, "data", r)
	r.Data = d
	return err
}

// SnapRestoreBeginRequest is the body of snap.restore.begin: make the
// directory Path match the manifest to come; with Delete, remove what it
// holds and the manifest does not.
type SnapRestoreBeginRequest struct {
	Path   string `msgpack:"path"`
	Delete bool   `msgpack:"del,omitempty"`
}

// Validate checks the path.
func (r *SnapRestoreBeginRequest) Validate() error { return validPath("path", r.Path) }

// SnapRestoreManifestRequest sends a page of the manifest; Last ends it,
// and the agent then plans the restore.
type SnapRestoreManifestRequest struct {
	Handle  string      `msgpack:"h"`
	Entries []SnapEntry `msgpack:"e"`
	Last    bool        `msgpack:"last,omitempty"`
}

// Validate checks the handle and entries.
func (r *SnapRestoreManifestRequest) Validate() error {
	if err := validHandle(r.Handle); err != nil {
		return err
	}
	return validEntries(r.Entries)
}

// SnapRestorePlan answers the last manifest page: Lack chunks are missing
// on the agent, Write files will be written. Sums, when the agent gives
// them, are the names of all Lack chunks (a short list): the control
// plane needs no snap.restore.lack call then.
type SnapRestorePlan struct {
	Lack  int    `msgpack:"lack"`
	Write int    `msgpack:"write"`
	Sums  []byte `msgpack:"c,omitempty"`
}

// SnapLackPage is names [Offset, Next) of the chunks a restore lacks.
type SnapLackPage struct {
	Sums []byte `msgpack:"c"`
	Next int    `msgpack:"next"`
}

// Validate checks the names.
func (r *SnapLackPage) Validate() error { return validSums(r.Sums) }

// SnapRestoreChunksRequest delivers chunks: Data holds them one after the
// other, Sizes their lengths, Sums their names. With Ticket, Data is empty
// and the chunks come on a bulk connection made with it (wire.BulkPath):
// the agent dials, reads Sizes' bytes (MaxSnapBulk at most) and writes
// each chunk as it is whole, then answers.
type SnapRestoreChunksRequest struct {
	Handle string   `msgpack:"h"`
	Sums   []byte   `msgpack:"c"`
	Sizes  []uint32 `msgpack:"z"`
	Ticket string   `msgpack:"tk,omitempty"`
	Data   []byte   `msgpack:"data"`
}

// Validate checks that names, sizes and data agree.
func (r *SnapRestoreChunksRequest) Validate() error {
	if err := validHandle(r.Handle); err != nil {
		return err
	}
	if err := validSums(r.Sums); err != nil {
		return err
	}
	if len(r.Sums) != SumSize*len(r.Sizes) {
		return Errorf(CodeInvalidArgument, "", "%d chunk names for %d sizes", len(r.Sums)/SumSize, len(r.Sizes))
	}
	var total int64
	for _, n := range r.Sizes {
		if n == 0 || n > MaxSnapChunk {
			return Errorf(CodeInvalidArgument, "", "a chunk of %d bytes", n)
		}
		total += int64(n)
	}
	if r.Ticket != "" {
		if err := ValidTicket(r.Ticket); err != nil {
			return err
		}
		if len(r.Data) != 0 || total > MaxSnapBulk {
			return Errorf(CodeInvalidArgument, "", "chunks of %d bytes on a bulk connection with %d bytes of data in the request", total, len(r.Data))
		}
		return nil
	}
	if total != int64(len(r.Data)) {
		return Errorf(CodeInvalidArgument, "", "chunks of %d bytes in %d bytes of data", total, len(r.Data))
	}
	return nil
}

// A SnapRestoreChunksRequest is encoded in place by a carry's forwarder
// (the control plane), which gathers the chunks in the buffer it sends,
// with room for the names and sizes before them (InPlace.Room).
func (r *SnapRestoreChunksRequest) inPlaceFields() ([]mapField, string) {
	return []mapField{
		{key: "h", kind: kindString, s: r.Handle},
		{key: "c", kind: kindBin, b: r.Sums},
		{key: "z", kind: kindUint32s, u32: r.Sizes},
		{key: "tk", kind: kindString, s: r.Ticket, omitEmpty: true},
	}, "data"
}

func (r *SnapRestoreChunksRequest) sizeHint() int {
	return len(r.Data) + len(r.Sums) + 5*len(r.Sizes) + envelopeSlack
}

// SnapRestoreResult is what a committed restore did: the manifest's Files
// and Bytes, files Written, entries Removed.
type SnapRestoreResult struct {
	Files   int   `msgpack:"files"`
	Bytes   int64 `msgpack:"bytes"`
	Written int   `msgpack:"written"`
	Removed int   `msgpack:"removed"`
}
