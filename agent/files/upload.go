package files

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"runtime"
	"strings"
	"sync"
)

// Upload is a write that arrives in pieces, for content sent in chunks. Bytes
// go to a temporary file next to the target; Commit moves it into place and
// Abort discards it. Exactly one of Commit or Abort should be called; Abort
// after Commit is a no-op, so `defer u.Abort()` is safe. Methods are safe for
// concurrent use.
type Upload struct {
	fs   *FS
	path string // clean target
	tmp  string // clean temporary file
	opts WriteOptions
	// dir, when set, is path's directory, open (a restore's, see
	// restoreDirs): the temporary file is made, timed and renamed by
	// its name in there, with no walk from the root.
	dir *os.Root
	// dirCheck, when set (with dir), says whether dir is still path's
	// directory: it is asked just before the temporary file is timed
	// and renamed by name in dir, and when it fails the file is closed
	// and left where it is, never renamed or removed by name there.
	dirCheck func() error

	mu     sync.Mutex
	file   *os.File
	size   int64     // largest end written
	hash   hash.Hash // over [0, hashed) while no write went behind it
	hashed int64
	ahead  map[int64]extent // extents written past hashed, by start
	held   int              // bytes of ahead's extents kept in memory
	kicked int64            // writeback started for [0, kicked)
	inOrd  bool
	done   bool
	failed error // why the upload ended early (a full disk); later calls return it
}

// BeginWrite starts writing file p. It checks p and opts, creates missing
// parents when asked, and creates the temporary file. An existing p without
// opts.Overwrite is ErrExist now and again at Commit.
func (f *FS) BeginWrite(p string, opts WriteOptions) (*Upload, error) {
	c, err := Clean(p)
	if err != nil {
		return nil, err
	}
	if c == "." {
		return nil, errorf(iofs.ErrInvalid, "write: the root is a directory")
	}
	if isTemp(c) {
		return nil, tempReserved("write", c)
	}
	if opts.Mode&^os.ModePerm != 0 {
		return nil, errorf(iofs.ErrInvalid, "write %s: mode %v has bits beyond 0777", c, opts.Mode)
	}
	if opts.MkdirParents {
		if err := f.root.MkdirAll(native(path.Dir(c)), dirMode); err != nil {
			return nil, mapErr("write", c, err)
		}
	}
	return f.beginWriteIn(nil, c, "", opts)
}

// beginWriteIn is BeginWrite once p is checked (clean c) and its parents
// made: it checks the target and creates the temporary file, in dir when
// set (c's directory, open), else by c's path from the root. reserved,
// when set, is the temporary file's name already in the journal (see
// createTemp).
func (f *FS) beginWriteIn(dir *os.Root, c, reserved string, opts WriteOptions) (*Upload, error) {
	u := &Upload{fs: f, path: c, opts: opts, dir: dir, hash: sha256.New(), inOrd: true}
	r, name := u.at(c)
	if err := checkTargetAt(r, name, c, opts.Overwrite); err != nil {
		if reserved != "" {
			f.forgetTemp(reserved)
		}
		return nil, err
	}
	tmp, file, err := f.createTemp(dir, path.Dir(c), reserved)
	if err != nil {
		return nil, mapErr("write", c, err)
	}
	u.tmp, u.file = tmp, file
	return u, nil
}

// at is the root and name by which the upload reaches clean path c (its
// target or its temporary file): c's base name in u.dir when set, else c
// from the FS's root.
func (u *Upload) at(c string) (*os.Root, string) {
	if u.dir != nil {
		return u.dir, path.Base(c)
	}
	return u.fs.root, native(c)
}

// createTemp creates a new temporary file in clean directory d, recorded
// in the journal (if any) before it exists. dir, when set, is d, open.
// reserved, when set, is a temporary name in d that the journal already
// lists (a restore records its files' names in batches, see
// Restore.reserve): it is tried first, and given up (its record with it)
// if it exists or cannot be made; a name that existed is followed by
// fresh names recorded one by one.
func (f *FS) createTemp(dir *os.Root, d, reserved string) (string, *os.File, error) {
	tries := 5
	if reserved != "" {
		tries++
	}
	for i := range tries {
		tmp := reserved
		if i > 0 || reserved == "" {
			tmp = tempName(d)
			f.recordTemp(tmp)
		}
		r, name := f.root, native(tmp)
		if dir != nil {
			r, name = dir, path.Base(tmp)
		}
		file, err := r.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|tempFlags, 0o600)
		if err != nil {
			f.forgetTemp(tmp)
		}
		if errors.Is(err, iofs.ErrExist) {
			continue
		}
		return tmp, file, err
	}
	return "", nil, iofs.ErrExist
}

// tempName is a new random temporary name in clean directory d.
func tempName(d string) string { return join(d, TempPrefix+rand.Text()) }

// Path is the clean root-relative path being written.
func (u *Upload) Path() string { return u.path }

// Write appends p after the furthest byte written so far.
func (u *Upload) Write(p []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.writeAt(p, u.size, false)
}

// WriteAt writes p at offset off. Chunks may come in any order; gaps read as
// zeros.
func (u *Upload) WriteAt(p []byte, off int64) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.writeAt(p, off, false)
}

// WriteAtRetained is WriteAt for a p the caller hands over: it never
// changes p again, so a chunk that arrives ahead of the hashed prefix is
// kept as it is, not copied, until the chunks before it came.
func (u *Upload) WriteAtRetained(p []byte, off int64) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.writeAt(p, off, true)
}

// writeAt writes with u.mu held. A full disk ends the upload at once: its
// temporary file is removed, so the space is free again before the caller
// aborts, and every later call reports the same error.
func (u *Upload) writeAt(p []byte, off int64, retained bool) (int, error) {
	if err := u.finished(); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, errorf(iofs.ErrInvalid, "write %s: negative offset %d", u.path, off)
	}
	n, err := writePieces(u.file, p, off)
	u.track(p[:n], off, retained)
	u.size = max(u.size, off+int64(n))
	if u.hashed-u.kicked >= writebackStep {
		startWriteback(u.file, u.kicked, u.hashed-u.kicked)
		u.kicked = u.hashed
	}
	if err != nil {
		err = mapErr("write", u.path, err)
		if errors.Is(err, ErrDiskFull) {
			u.done, u.failed = true, err
			u.discard()
		}
		return n, err
	}
	return n, nil
}

// writePiece bounds one write to the file. A chunk of megabytes is written
// in pieces: a write of 1 MiB or more makes Linux fill large page-cache
// folios, which on a VM cost 4-8 times the CPU of the same bytes in smaller
// writes (1 GiB in 2 MiB writes: 1.1-2.4 s of system time; in 256 KiB
// writes: 0.3 s), and a chunk's write was a third of an upload's CPU.
const writePiece = 256 << 10

// writePieces writes p at off in pieces of at most writePiece bytes.
func writePieces(f *os.File, p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := f.WriteAt(p[n:n+min(writePiece, len(p)-n)], off+int64(n))
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// finished is the error for a call after the upload ended: the disk-full
// error that ended it, or ErrUploadDone.
func (u *Upload) finished() error {
	switch {
	case u.failed != nil:
		return u.failed
	case u.done:
		return errorf(ErrUploadDone, "write %s: upload already finished", u.path)
	}
	return nil
}

// discard closes and removes the temporary file.
func (u *Upload) discard() error {
	u.file.Close()
	r, name := u.at(u.tmp)
	err := r.Remove(name)
	if err != nil && errors.Is(err, iofs.ErrNotExist) {
		err = nil
	}
	u.fs.forgetTemp(u.tmp)
	return err
}

// writebackStep is how much contiguous content accumulates before its
// writeback to disk is started, spreading Commit's sync over the upload.
const writebackStep = 8 << 20

// extent is content written past the hashed prefix: [start, end), and
// its bytes when they are kept in memory (nil: read back from the file).
type extent struct {
	end  int64
	data []byte
}

// maxHeld bounds the bytes of chunks kept in memory, per upload, while
// they wait for the chunks before them. The control plane has at most its
// window (6 chunks of 2 MiB) in flight, so in practice every chunk that
// arrives early is kept: reading them back from the file cost an upload a
// second pass over its bytes.
const maxHeld = 32 << 20

// track keeps the running hash up to date after p was written at off:
// chunks in order are hashed as they come, chunks ahead of the hashed
// prefix are kept (in memory up to maxHeld, else read back from the file)
// and hashed once the gap before them is filled, and a write behind the
// prefix, or over an extent waiting ahead, makes Commit read the whole
// file back. With retained, p is the upload's to keep.
func (u *Upload) track(p []byte, off int64, retained bool) {
	end := off + int64(len(p))
	switch {
	case u.opts.NoHash || !u.inOrd || len(p) == 0:
	case off < u.hashed:
		u.readBackAll()
	case off > u.hashed:
		u.hold(p, off, end, retained)
	default:
		u.hash.Write(p)
		u.hashed = end
		u.catchUp()
	}
}

// hold records the extent [off, end) written ahead of the hashed prefix.
func (u *Upload) hold(p []byte, off, end int64, retained bool) {
	for start, e := range u.ahead {
		if off < e.end && start < end {
			// Overlapping writes ahead: what is kept may no longer be
			// what the file holds.
			u.readBackAll()
			return
		}
	}
	if u.ahead == nil {
		u.ahead = map[int64]extent{}
	}
	e := extent{end: end}
	if u.held+len(p) <= maxHeld {
		e.data = p
		if !retained {
			e.data = append([]byte(nil), p...)
		}
		u.held += len(p)
	}
	u.ahead[off] = e
}

// readBackAll gives up the running hash: Commit reads the file back.
func (u *Upload) readBackAll() {
	u.inOrd = false
	u.ahead, u.held = nil, 0
}

// catchUp hashes extents written ahead that now continue the hashed prefix.
func (u *Upload) catchUp() {
	for u.inOrd {
		e, ok := u.ahead[u.hashed]
		if !ok {
			return
		}
		delete(u.ahead, u.hashed)
		if e.data != nil {
			u.hash.Write(e.data)
			u.held -= len(e.data)
		} else if _, err := io.Copy(u.hash, io.NewSectionReader(u.file, u.hashed, e.end-u.hashed)); err != nil {
			u.readBackAll()
			return
		}
		u.hashed = e.end
	}
}

// Commit syncs the content and renames it into place. Without Overwrite, a
// file created at the path since BeginWrite is ErrExist. On
// any error the temporary file is removed and the target left as it was.
func (u *Upload) Commit() (WriteResult, error) {
	return u.CommitVerified(-1, "")
}

// CommitVerified is Commit that first checks the content: its size when
// size >= 0 and its hex SHA-256 when sha256 is set. A mismatch is
// ErrChecksumMismatch, and the upload is discarded.
func (u *Upload) CommitVerified(size int64, sha256 string) (WriteResult, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.finished(); err != nil {
		return WriteResult{}, err
	}
	u.done = true
	res, err := u.commit(size, sha256)
	if moved, ok := err.(dirMovedError); ok {
		u.fs.forgetTemp(u.tmp) // closed; not where it was made
		return WriteResult{}, moved.err
	}
	if err != nil {
		u.discard()
		return WriteResult{}, err
	}
	return res, nil
}

// commit does Commit's work with u.mu held.
func (u *Upload) commit(size int64, want string) (WriteResult, error) {
	if size >= 0 && size != u.size {
		return WriteResult{}, errorf(ErrChecksumMismatch,
			"write %s: received %d bytes, sender sent %d", u.path, u.size, size)
	}
	sum, err := u.sum()
	if err != nil {
		return WriteResult{}, mapErr("write", u.path, err)
	}
	if want != "" && !strings.EqualFold(want, sum) {
		return WriteResult{}, errorf(ErrChecksumMismatch,
			"write %s: sha256 of what was written is %s, sender's is %s", u.path, sum, want)
	}
	mode := u.fs.modeFor(u.path, u.opts.Mode)
	if err := u.file.Chmod(mode); err != nil {
		return WriteResult{}, mapErr("write", u.path, err)
	}
	if !u.opts.NoSync {
		if err := u.file.Sync(); err != nil {
			return WriteResult{}, mapErr("write", u.path, err)
		}
	}
	// Timed through the descriptor where the platform can (nothing
	// writes to the file after this), else by name below.
	mt := u.opts.ModTime
	timed := !mt.IsZero() && setTimes(u.file, mt)
	if err := u.file.Close(); err != nil {
		return WriteResult{}, mapErr("write", u.path, err)
	}
	if u.dirCheck != nil {
		if err := u.dirCheck(); err != nil {
			return WriteResult{}, dirMovedError{err}
		}
	}
	if !mt.IsZero() && !timed {
		r, name := u.at(u.tmp)
		if err := r.Chtimes(name, mt, mt); err != nil {
			return WriteResult{}, mapErr("write", u.path, err)
		}
	}
	if err := u.place(); err != nil {
		return WriteResult{}, err
	}
	u.fs.forgetTemp(u.tmp)
	if !u.opts.NoSync {
		u.fs.syncDir(path.Dir(u.path))
	}
	return WriteResult{Path: u.path, Size: u.size, SHA256: sum}, nil
}

// sum is the hex SHA-256 of the temporary file's content, read back when the
// writes came out of order.
func (u *Upload) sum() (string, error) {
	if u.opts.NoHash {
		return "", nil
	}
	if !u.inOrd || u.hashed != u.size {
		u.hash.Reset()
		if _, err := io.Copy(u.hash, io.NewSectionReader(u.file, 0, u.size)); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(u.hash.Sum(nil)), nil
}

// place moves the temporary file to the target. Without Overwrite it links
// the file in, which fails if the target exists, so of two racing writers
// exactly one wins; where links are unsupported it checks and renames.
func (u *Upload) place() error {
	r, src := u.at(u.tmp)
	_, dst := u.at(u.path)
	if u.opts.Overwrite {
		return mapErr("write", u.path, r.Rename(src, dst))
	}
	err := r.Link(src, dst)
	switch {
	case err == nil:
		r.Remove(src)
		return nil
	case errors.Is(err, iofs.ErrExist):
		return errorf(iofs.ErrExist, "write %s: already exists", u.path)
	case isEscape(err), errors.Is(err, iofs.ErrNotExist):
		return mapErr("write", u.path, err)
	}
	if err := checkTargetAt(r, dst, u.path, false); err != nil {
		return err
	}
	return mapErr("write", u.path, r.Rename(src, dst))
}

// Abort discards the upload and its temporary file. It is idempotent and a
// no-op after Commit.
func (u *Upload) Abort() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return nil
	}
	u.done = true
	return mapErr("abort write", u.path, u.discard())
}

// dirMovedError is commit's error when dirCheck failed.
type dirMovedError struct{ err error }

func (e dirMovedError) Error() string { return e.err.Error() }

// abandon ends the upload without touching its temporary file by name:
// it is closed and forgotten by the journal (a restore's directory that
// was moved away while the file was written: see restoreDirs.check).
func (u *Upload) abandon() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return
	}
	u.done = true
	u.file.Close()
	u.fs.forgetTemp(u.tmp)
}

// syncDir flushes directory c so a rename in it survives a crash. It is best
// effort; Windows cannot sync a directory handle.
func (f *FS) syncDir(c string) {
	if runtime.GOOS == "windows" {
		return
	}
	d, err := f.root.Open(native(c))
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
