package files

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Archive errors, beyond the package's other kinds.
var (
	// ErrUnsafeEntry: a tar entry would leave the directory it is unpacked
	// into: an absolute or ".." name, a symlink or hard link pointing out,
	// or an entry under a symlink the same archive made. Nothing of that
	// entry was written.
	ErrUnsafeEntry = errors.New("unsafe archive entry")
	// ErrArchiveTooLarge: the archive declares more entries or bytes than
	// the limits allow (a tar bomb); refused at the header, before its
	// content is written.
	ErrArchiveTooLarge = errors.New("archive too large")
	// ErrUnsupportedEntry: a tar entry of a type that is not unpacked
	// (devices, FIFOs).
	ErrUnsupportedEntry = errors.New("unsupported archive entry")
)

// ArchiveLimits bound what one unpack may create.
type ArchiveLimits struct {
	// MaxEntries is the most entries (files, directories, links).
	MaxEntries int
	// MaxBytes is the most file content, as the headers declare it (a
	// sparse file counts its full size).
	MaxBytes int64
}

// DefaultArchiveLimits: 1,000,000 entries (a large monorepo with its
// node_modules is a few hundred thousand files) and 64 GiB of content. A
// tar is not compressed, so the bytes limit only matters for headers that
// claim sizes (or sparse maps) with little behind them; it stops such an
// entry at its header instead of at a full disk.
var DefaultArchiveLimits = ArchiveLimits{MaxEntries: 1_000_000, MaxBytes: 64 << 30}

// ArchiveResult counts what an unpack wrote.
type ArchiveResult struct {
	Files, Dirs, Links int
	Bytes              int64
}

// maxTrailing is how much data after the archive's end marker is read and
// ignored (tar pads to 10 KiB records; some writers pad more).
const maxTrailing = 1 << 20

// CheckEntryName validates a tar entry's name and returns it as a clean
// slash path relative to the directory being unpacked into. Absolute
// names, names with ".." that leave it, volume names, NUL bytes and the
// agent's temporary names are refused; "." (the directory itself) is
// returned for "./" and the like.
func CheckEntryName(name string) (string, error) {
	if name == "" {
		return "", errorf(ErrUnsafeEntry, "archive entry with an empty name")
	}
	n := strings.ReplaceAll(name, "\\", "/")
	if strings.HasPrefix(n, "/") || (len(n) >= 2 && n[1] == ':') {
		return "", errorf(ErrUnsafeEntry, "archive entry %q is absolute", name)
	}
	c, err := Clean(n)
	if err != nil {
		if errors.Is(err, ErrOutsideRoot) {
			return "", errorf(ErrUnsafeEntry, "archive entry %q leaves the directory", name)
		}
		return "", err
	}
	if isTemp(c) {
		return "", tempReserved("unpack", c)
	}
	return c, nil
}

// CheckLinkTarget validates the target of symlink entry c (clean, relative
// to the unpack directory): it must be relative and, resolved from the
// link's directory, stay inside the unpack directory.
func CheckLinkTarget(c, target string) error {
	t := strings.ReplaceAll(target, "\\", "/")
	if t == "" || strings.HasPrefix(t, "/") || (len(t) >= 2 && t[1] == ':') || strings.IndexByte(t, 0) >= 0 {
		return errorf(ErrUnsafeEntry, "archive symlink %s -> %q points outside", c, target)
	}
	r := path.Clean(path.Join(path.Dir(c), t))
	if r == ".." || strings.HasPrefix(r, "../") {
		return errorf(ErrUnsafeEntry, "archive symlink %s -> %q points outside", c, target)
	}
	return nil
}

// unpack is the state of one ExtractArchive.
type unpack struct {
	f     *FS
	dest  string // clean destination directory
	lim   ArchiveLimits
	res   ArchiveResult
	links map[string]bool // symlinks this archive made, lower-cased
	files map[string]bool // regular files this archive wrote
	dirs  map[string]*os.Root
	tmpID string // this unpack's temporary names: TempPrefix+tmpID+seq
	seq   int
	buf   []byte // large files' content on its way from the tar to the disk
	taken int64  // bytes of the files taken so far (the limit's count)

	// Small files are written by workers (see startWorkers): inflight
	// has the lower-cased names handed to them and not known written,
	// busy counts them; res, files and failed are under mu.
	jobs     chan *fileWrite
	workers  sync.WaitGroup
	busy     sync.WaitGroup
	inflight map[string]bool
	mu       sync.Mutex
	failed   error
	// failedSeq is the failed file's place in the stream (its seq): a
	// worker skips the files after it (see skip).
	failedSeq int

	// pending are small files read and not yet handed to the workers:
	// they go together, their temporary names recorded in the journal
	// with one write and one sync (see flush); pendingBytes is their
	// content's size. handed counts the files of the last batch handed
	// to the workers and not yet written.
	pending      []*fileWrite
	pendingBytes int64
	handed       sync.WaitGroup
}

// maxUnpackDirs bounds the directories an unpack keeps open.
const maxUnpackDirs = 64

// dir returns clean directory c, made when missing, opened as a root of
// its own: a file's create, chmod and rename in it are then each one call
// on a name in it, not a walk from the root (os.Root opens and closes
// every directory on the way). It is opened through the FS's root, so it
// is confined as every path is; the archive cannot replace a directory it
// holds (a file, link or symlink entry over a directory is refused), and
// entries under a symlink the archive made never get here.
func (u *unpack) dir(c string) (*os.Root, error) {
	if r, ok := u.dirs[c]; ok {
		return r, nil
	}
	if err := u.f.root.MkdirAll(native(c), dirMode); err != nil {
		return nil, mapErr("unpack", c, err)
	}
	r, err := u.f.root.OpenRoot(native(c))
	if err != nil {
		return nil, mapErr("unpack", c, err)
	}
	if len(u.dirs) >= maxUnpackDirs {
		u.barrier() // the workers may hold them; a failure is seen at the next entry
		u.closeDirs()
	}
	u.dirs[c] = r
	return r, nil
}

// replaced forgets the open directories at or under clean path c, where
// the unpack just placed a file or link (over a symlink to a directory,
// say): later entries under c resolve it anew.
func (u *unpack) replaced(c string) {
	waited := false
	for d, r := range u.dirs {
		if d == c || strings.HasPrefix(d, c+"/") || c == "." {
			if !waited {
				u.barrier() // the workers may hold it; a failure is seen at the next entry
				waited = true
			}
			r.Close()
			delete(u.dirs, d)
		}
	}
}

// closeDirs closes the directories the unpack holds open.
func (u *unpack) closeDirs() {
	for c, r := range u.dirs {
		r.Close()
		delete(u.dirs, c)
	}
}

// ExtractArchive unpacks the tar stream r into directory p (created when
// missing). Every regular file is written atomically (a temporary file
// renamed over its name, as Write does with overwrite); small files are
// written several at once, in the stream's order wherever it matters (a
// name written twice, a link or directory after files, entries under a
// name just replaced). An entry that is unsafe, unsupported or over the
// limits ends the unpack with its error, leaving the entries before it in
// place and nothing of it or after it. A file that cannot be written (a
// full disk, a directory in its way) ends it too, with the files before
// it in place; files after it that were being written alongside may land.
// Where the platform can (Linux: syncfs), files are not synced one by one
// but all at once at the end, before it returns: an fsync per file made
// 20,000 small files take ten times rsync's time. Symlinks are made only
// when they point inside p; an entry under a symlink the archive made is
// refused (lower-cased comparison, so it holds on case-insensitive disks
// too); a hard link must name a file this archive wrote. Data after the
// end marker is ignored.
func (f *FS) ExtractArchive(ctx context.Context, p string, r io.Reader, lim ArchiveLimits) (ArchiveResult, error) {
	dest, err := Clean(p)
	if err != nil {
		return ArchiveResult{}, err
	}
	if isTemp(dest) {
		return ArchiveResult{}, tempReserved("unpack", dest)
	}
	if err := f.root.MkdirAll(native(dest), dirMode); err != nil {
		return ArchiveResult{}, mapErr("unpack", dest, err)
	}
	u := &unpack{f: f, dest: dest, lim: lim, links: map[string]bool{}, files: map[string]bool{},
		dirs: map[string]*os.Root{}, tmpID: rand.Text()[:8] + "-", inflight: map[string]bool{}}
	err = u.run(ctx, r)
	u.stopWorkers()
	u.closeDirs()
	if ferr := u.failure(); ferr != nil {
		err = ferr
	}
	if serr := f.syncAll(dest); err == nil {
		err = serr
	}
	return u.res, err
}

// run reads the stream and unpacks its entries, up to the first error.
func (u *unpack) run(ctx context.Context, r io.Reader) error {
	tr := tar.NewReader(r)
	for entries := 0; ; entries++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			io.CopyN(io.Discard, r, maxTrailing)
			return nil
		}
		if err != nil {
			return errorf(iofs.ErrInvalid, "unpack %s: reading the tar stream: %v", u.dest, err)
		}
		if entries >= u.lim.MaxEntries {
			return errorf(ErrArchiveTooLarge, "unpack %s: more than %d entries", u.dest, u.lim.MaxEntries)
		}
		if err := u.failure(); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeRegA {
			// Directories and links wait for the files before them.
			if err := u.barrier(); err != nil {
				return err
			}
		}
		if err := u.entry(h, tr); err != nil {
			return err
		}
	}
}

// entry unpacks one entry.
func (u *unpack) entry(h *tar.Header, tr io.Reader) error {
	if h.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	c, err := CheckEntryName(h.Name)
	if err != nil {
		return err
	}
	if err := u.underLink(c); err != nil {
		return err
	}
	full := join(u.dest, c)
	if u.f.hidden(full) {
		return errorf(ErrDenied, "archive entry %s: %s is a path the machine owner's policy denies", c, full)
	}
	if err := u.f.writeCheck(full); err != nil {
		return fmt.Errorf("archive entry %s: %w", c, err)
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if c == "." {
			return nil
		}
		if err := u.f.root.MkdirAll(native(full), dirMode); err != nil {
			return mapErr("unpack", full, err)
		}
		u.res.Dirs++
		return nil
	case tar.TypeReg, tar.TypeRegA:
		return u.file(c, full, h, tr)
	case tar.TypeSymlink:
		return u.symlink(c, full, h.Linkname)
	case tar.TypeLink:
		return u.hardlink(c, full, h.Linkname)
	}
	return errorf(ErrUnsupportedEntry, "archive entry %s: type %q is not unpacked (only files, directories and links)", c, h.Typeflag)
}

// underLink refuses c when it or a parent is a symlink this archive made.
func (u *unpack) underLink(c string) error {
	l := strings.ToLower(c)
	for d := path.Dir(l); d != "."; d = path.Dir(d) {
		if u.links[d] {
			return errorf(ErrUnsafeEntry, "archive entry %s lies under a symlink the archive made", c)
		}
	}
	return nil
}

// file unpacks one regular file. One of up to maxSmallEntry bytes is read
// into memory and written by a worker, alongside the next ones; a larger
// one is written here, once the workers are done, straight from the
// stream.
func (u *unpack) file(c, full string, h *tar.Header, tr io.Reader) error {
	if c == "." {
		return errorf(ErrUnsafeEntry, "archive entry %q names the directory itself", h.Name)
	}
	if h.Size < 0 || h.Size > u.lim.MaxBytes-u.taken {
		return errorf(ErrArchiveTooLarge, "archive entry %s: %d bytes would pass the limit of %d", c, h.Size, u.lim.MaxBytes)
	}
	u.taken += h.Size
	dirC, base := path.Dir(full), path.Base(full)
	// A file over one being written, or under one (a file replacing a
	// symlink to a directory), waits for it.
	if u.inflight[strings.ToLower(c)] || u.underInflight(c) || h.Size > maxSmallEntry {
		if err := u.barrier(); err != nil {
			return err
		}
	}
	dir, err := u.dir(dirC)
	if err != nil {
		return err
	}
	mode := os.FileMode(h.Mode) & os.ModePerm
	u.seq++
	w := &fileWrite{dir: dir, dirC: dirC, base: base, c: c, full: full, mode: mode, size: h.Size,
		seq: u.seq, tmpName: TempPrefix + u.tmpID + strconv.Itoa(u.seq)}
	// Later entries see the name as the file it is about to be.
	u.replaced(full)
	delete(u.links, strings.ToLower(c))
	if h.Size > maxSmallEntry {
		return u.done(w, u.write(w, func(f *os.File) error { return u.copyContent(f, tr, h.Size, c) }))
	}
	w.data = getEntryBuf(int(h.Size))
	if _, err := io.ReadFull(tr, w.data); err != nil {
		putEntryBuf(w.data)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errorf(iofs.ErrInvalid, "archive entry %s: the stream ended inside its content", c)
		}
		return mapErr("unpack", full, err)
	}
	if err := u.failure(); err != nil {
		putEntryBuf(w.data)
		return err
	}
	u.inflight[strings.ToLower(c)] = true
	u.busy.Add(1)
	u.pending = append(u.pending, w)
	u.pendingBytes += h.Size
	if len(u.pending) >= maxPendingFiles || u.pendingBytes >= maxPendingBytes {
		u.flush()
	}
	return nil
}

// Pending small files are handed to the workers once there are
// maxPendingFiles of them or maxPendingBytes of content, or when the
// unpack must wait for the files before (barrier).
var (
	maxPendingFiles       = 256
	maxPendingBytes int64 = 4 << 20
)

// flush hands the pending files to the workers, their temporary names
// recorded in the journal first with one write and one sync: an agent's
// journal was synced once per file, 20,000 syncs for 20,000 small files
// (on macOS each an F_FULLFSYNC, milliseconds). It first waits for the
// batch handed before, so that the workers write one batch while the
// next is read, and at most two are in memory. After a failure the
// pending files are dropped: they come after the file that failed.
func (u *unpack) flush() {
	if len(u.pending) == 0 {
		return
	}
	u.handed.Wait()
	if u.failure() != nil {
		for _, w := range u.pending {
			putEntryBuf(w.data)
			u.busy.Done()
		}
	} else {
		tmps := make([]string, len(u.pending))
		for i, w := range u.pending {
			tmps[i] = join(w.dirC, w.tmpName)
		}
		u.f.recordTemps(tmps)
		u.startWorkers()
		u.handed.Add(len(u.pending))
		for _, w := range u.pending {
			u.jobs <- w
		}
	}
	clear(u.pending)
	u.pending, u.pendingBytes = u.pending[:0], 0
}

// fileWrite is one regular file to write: its content from data (a
// worker) or from the stream.
type fileWrite struct {
	dir                 *os.Root
	dirC, base, c, full string
	tmpName             string
	mode                os.FileMode
	size                int64
	seq                 int // its place in the stream
	data                []byte
}

// maxSmallEntry is the largest file an unpack reads into memory and
// hands to a worker; unpackWorkers write such files at once, a batch of
// them (see flush) queued. Creating a file is most of what a
// small one costs, and those calls overlap.
const (
	maxSmallEntry = 1 << 20
	unpackWorkers = 4
)

// startWorkers starts the unpack's workers, once.
func (u *unpack) startWorkers() {
	if u.jobs != nil {
		return
	}
	u.jobs = make(chan *fileWrite, maxPendingFiles)
	for range unpackWorkers {
		u.workers.Go(func() {
			for w := range u.jobs {
				if workerHook != nil {
					workerHook(u, w)
				}
				if u.skip(w) {
					u.f.forgetTemp(join(w.dirC, w.tmpName)) // flush recorded it
				} else {
					err := u.write(w, func(f *os.File) error { _, err := f.Write(w.data); return err })
					u.done(w, err)
				}
				putEntryBuf(w.data)
				u.handed.Done()
				u.busy.Done()
			}
		})
	}
}

// workerHook, when set (tests only, before an unpack starts), is called
// by a worker with each file it takes, before it writes it.
var workerHook func(*unpack, *fileWrite)

// stopWorkers waits for the files being written and ends the workers.
func (u *unpack) stopWorkers() {
	u.flush()
	if u.jobs != nil {
		close(u.jobs)
		u.workers.Wait()
		u.jobs = nil
	}
}

// barrier waits until every file handed to the workers is written, and
// returns the first failure.
func (u *unpack) barrier() error {
	u.flush()
	u.busy.Wait()
	clear(u.inflight)
	return u.failure()
}

// failure is the first error a worker met.
func (u *unpack) failure() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.failed
}

// underInflight reports whether a parent of c is a file being written.
func (u *unpack) underInflight(c string) bool {
	if len(u.inflight) == 0 {
		return false
	}
	l := strings.ToLower(c)
	for d := path.Dir(l); d != "."; d = path.Dir(d) {
		if u.inflight[d] {
			return true
		}
	}
	return false
}

// skip reports whether w comes after a file that failed: a batch's
// files after it are not written (those a worker had taken may land).
func (u *unpack) skip(w *fileWrite) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.failed != nil && w.seq > u.failedSeq
}

// done records a file written (err nil) or a failure: the failure of the
// file first in the stream is the one reported, as the files before it
// are in place.
func (u *unpack) done(w *fileWrite, err error) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil {
		if u.failed == nil || w.seq < u.failedSeq {
			u.failed, u.failedSeq = err, w.seq
		}
		return err
	}
	u.files[w.c] = true
	u.res.Files++
	u.res.Bytes += w.size
	return nil
}

// write writes one regular file atomically: a new temporary file beside
// it, its content (fill), its mode, then a rename over the name (as Write
// does with Overwrite, without the hash). A directory in the way is an
// error; a mode of 0 keeps the old file's, else DefaultFileMode.
func (u *unpack) write(w *fileWrite, fill func(*os.File) error) error {
	tmp := join(w.dirC, w.tmpName)
	u.f.recordTemp(tmp) // a small file's name was recorded by flush: no sync here
	defer u.f.forgetTemp(tmp)
	switch fi, err := w.dir.Lstat(w.base); {
	case err == nil && fi.IsDir():
		return errorf(iofs.ErrInvalid, "write %s: is a directory", w.full)
	case err == nil && w.mode == 0 && fi.Mode().IsRegular():
		w.mode = fi.Mode().Perm()
	case w.mode == 0:
		w.mode = DefaultFileMode
	}
	file, err := w.dir.OpenFile(w.tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return mapErr("unpack", w.full, err)
	}
	err = fill(file)
	if err == nil {
		err = file.Chmod(w.mode)
	}
	if err == nil && !canSyncAll {
		err = file.Sync()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.dir.Rename(w.tmpName, w.base)
	}
	if err != nil {
		w.dir.Remove(w.tmpName)
		return mapErr("unpack", w.full, err)
	}
	return nil
}

// entryBufs hold small files' content between the stream and a worker, by
// size class (powers of two from 4 KiB).
var entryBufs [9]sync.Pool

func entryClass(n int) int {
	c := 0
	for size := 4 << 10; size < n && c < len(entryBufs)-1; size <<= 1 {
		c++
	}
	return c
}

func getEntryBuf(n int) []byte {
	c := entryClass(n)
	if b, ok := entryBufs[c].Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]byte, n, max(n, (4<<10)<<c))
}

func putEntryBuf(b []byte) {
	if cap(b) < 4<<10 || cap(b) > maxSmallEntry {
		return
	}
	c := entryClass(cap(b))
	if (4<<10)<<c != cap(b) {
		return
	}
	entryBufs[c].Put(&b)
}

// copyContent copies an entry's size bytes from tr to file through the
// unpack's buffer.
func (u *unpack) copyContent(file *os.File, tr io.Reader, size int64, c string) error {
	if u.buf == nil {
		u.buf = make([]byte, 256<<10)
	}
	for size > 0 {
		n, err := io.ReadFull(tr, u.buf[:min(int64(len(u.buf)), size)])
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return errorf(iofs.ErrInvalid, "archive entry %s: the stream ended inside its content", c)
			}
			return err
		}
		if _, err := file.Write(u.buf[:n]); err != nil {
			return err
		}
		size -= int64(n)
	}
	return nil
}

// symlink makes a link that points inside the destination, atomically.
func (u *unpack) symlink(c, full, target string) error {
	if c == "." {
		return errorf(ErrUnsafeEntry, "archive entry %q names the directory itself", c)
	}
	if err := CheckLinkTarget(c, target); err != nil {
		return err
	}
	err := u.place(full, func(tmp string) error {
		return u.f.root.Symlink(strings.ReplaceAll(target, "/", string(os.PathSeparator)), native(tmp))
	})
	if err != nil {
		return err
	}
	u.links[strings.ToLower(c)] = true
	u.res.Links++
	return nil
}

// hardlink links c to a file this archive wrote.
func (u *unpack) hardlink(c, full, target string) error {
	t, err := CheckEntryName(target)
	if err != nil || !u.files[t] {
		return errorf(ErrUnsafeEntry, "archive hard link %s -> %q: only files the archive wrote may be linked", c, target)
	}
	src := join(u.dest, t)
	if err := u.place(full, func(tmp string) error { return u.f.root.Link(native(src), native(tmp)) }); err != nil {
		return err
	}
	u.files[c] = true
	u.res.Links++
	return nil
}

// place makes a new name with mk under a temporary name beside full and
// renames it over full, creating parents.
func (u *unpack) place(full string, mk func(tmp string) error) error {
	dir := path.Dir(full)
	if err := u.f.root.MkdirAll(native(dir), dirMode); err != nil {
		return mapErr("unpack", full, err)
	}
	tmp := join(dir, TempPrefix+rand.Text())
	u.f.recordTemp(tmp)
	defer u.f.forgetTemp(tmp)
	if err := mk(tmp); err != nil {
		return mapErr("unpack", full, err)
	}
	if fi, err := u.f.root.Lstat(native(full)); err == nil && fi.IsDir() {
		u.f.root.Remove(native(tmp))
		return errorf(iofs.ErrExist, "unpack %s: a directory is in the way", full)
	}
	if err := u.f.root.Rename(native(tmp), native(full)); err != nil {
		u.f.root.Remove(native(tmp))
		return mapErr("unpack", full, err)
	}
	u.replaced(full)
	return nil
}

// WriteArchive writes the tree at p to w as a tar stream, names relative
// to p (a file gives one entry, its base name). Symlinks are stored as
// links, never followed; other special files and the agent's temporary
// files are left out; entries that vanish during the walk are skipped.
// Each directory is opened once (an os.Root of it) and its entries are
// opened by name in it, not walked to from the root.
func (f *FS) WriteArchive(ctx context.Context, p string, w io.Writer) error {
	c, err := Clean(p)
	if err != nil {
		return err
	}
	e, err := f.Stat(c)
	if err != nil {
		return err
	}
	a := &archiver{f: f, tw: tar.NewWriter(w), buf: make([]byte, 256<<10)}
	if e.Type != TypeDir {
		parent, err := f.root.OpenRoot(native(path.Dir(c)))
		if err != nil {
			return mapErr("archive", c, err)
		}
		defer parent.Close()
		if err := a.entry(parent, c, path.Base(c), path.Base(c), false); err != nil {
			return err
		}
	} else if err := a.dir(ctx, c, ""); err != nil {
		return err
	}
	return a.tw.Close()
}

// archiver is the state of one WriteArchive.
type archiver struct {
	f   *FS
	tw  *tar.Writer
	buf []byte // file content on its way to the tar
}

// dir writes the entries of directory c, named under prefix.
func (a *archiver) dir(ctx context.Context, c, prefix string) error {
	d, err := a.f.root.OpenRoot(native(c))
	if err != nil {
		return mapErr("archive", c, err)
	}
	defer d.Close()
	es, err := readDir(d)
	if err != nil {
		return mapErr("archive", c, err)
	}
	for _, e := range es {
		n := e.Name()
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(n, TempPrefix) || a.f.hidden(join(c, n)) {
			continue
		}
		sub, name := join(c, n), join(prefix, n)
		if prefix == "" {
			name = n
		}
		err := a.entry(d, sub, n, name, e.Type().IsRegular())
		if errors.Is(err, errIsDir) {
			err = a.dir(ctx, sub, name)
		}
		if err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// errIsDir tells dir to descend: entry wrote a directory's header.
var errIsDir = errors.New("directory")

// entry writes the header (and content, for a file) of base, in directory
// d, whose clean path is c, as name. A file the directory listing said is
// regular is opened straight away (its header comes from the open file).
func (a *archiver) entry(d *os.Root, c, base, name string, regular bool) error {
	h := &tar.Header{Name: name, Format: tar.FormatPAX}
	if !regular {
		fi, err := d.Lstat(base)
		if err != nil {
			return mapErr("archive", c, err)
		}
		h.Mode, h.ModTime = int64(fi.Mode().Perm()), fi.ModTime()
		if !fi.Mode().IsRegular() {
			return a.special(d, c, base, h, fi.Mode())
		}
	}
	file, err := d.OpenFile(base, readFlags, 0)
	if err != nil {
		return mapErr("archive", c, err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return mapErr("archive", c, err)
	}
	return a.fileContent(file, fi, c, h)
}

// special writes the header of a directory (errIsDir then tells dir to
// descend) or a symlink; other types are left out.
func (a *archiver) special(d *os.Root, c, base string, h *tar.Header, m iofs.FileMode) error {
	switch {
	case m.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		if err := a.tw.WriteHeader(h); err != nil {
			return fmt.Errorf("archive %s: %w", c, err)
		}
		return errIsDir
	case m&iofs.ModeSymlink != 0:
		link, err := d.Readlink(base)
		if err != nil {
			return mapErr("archive", c, err)
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, filepath.ToSlash(link)
		return a.tw.WriteHeader(h)
	}
	return nil
}

// fileContent writes file's header h and content.
func (a *archiver) fileContent(file *os.File, fi iofs.FileInfo, c string, h *tar.Header) error {
	h.Typeflag, h.Size, h.Mode, h.ModTime = tar.TypeReg, fi.Size(), int64(fi.Mode().Perm()), fi.ModTime()
	if err := a.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("archive %s: %w", c, err)
	}
	// A file that shrinks meanwhile is padded with zeros, one that grows
	// is cut at its size: the header's size is what the stream carries.
	for left := h.Size; left > 0; {
		n, err := io.ReadFull(file, a.buf[:min(int64(len(a.buf)), left)])
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			clear(a.buf[n:min(int64(len(a.buf)), left)])
			n, err = int(min(int64(len(a.buf)), left)), nil
		}
		if err == nil {
			_, err = a.tw.Write(a.buf[:n])
		}
		if err != nil {
			return fmt.Errorf("archive %s: %w", c, err)
		}
		left -= int64(n)
	}
	return nil
}
