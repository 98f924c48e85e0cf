package files

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// RestoreOptions control BeginRestore.
type RestoreOptions struct {
	// Delete removes what the directory holds and the manifest does not.
	Delete bool
	// Survey, when set, is a listing of the directory begun before (see
	// StartSurvey): BeginRestore stops it and looks files up in what it
	// listed.
	Survey *Survey
}

// RestoreResult counts what a restore did.
type RestoreResult struct {
	// Files and Bytes are the manifest's regular files and their content.
	Files int
	Bytes int64
	// Written counts files written, Removed entries removed (Delete).
	Written, Removed int
}

// Restore makes a directory match a manifest. BeginRestore checks the
// manifest, makes its directories and finds what is already there; Lack
// says which chunks must come from elsewhere; Put delivers each; Commit
// writes the rest and finishes. Every file lands atomically (a temporary
// file renamed into place), so a restore cut short, by an error or a
// crash, leaves each file old or new. Safe for concurrent Puts.
type Restore struct {
	fs      *FS
	base    string
	opts    RestoreOptions
	entries []SnapEntry

	// ops is held shared by each Put while it writes, and exclusively
	// by Commit and Abort: Puts of different files run at once.
	ops   sync.RWMutex
	mu    sync.Mutex             // want, done
	files []*restoreFile         // files to write
	want  map[Sum][]restorePlace // chunks still to come, and where they go
	lack  []Sum
	same  []*SnapEntry // files right but for their mode or time
	// listed holds the directory listings planFile looks files up in,
	// each directory's complete, none taken before listedAt; with
	// Delete they are kept for the commit's walk (removeExtra), which
	// then reads no directory the survey or the plan listed, unless
	// they are older than maxListingAge.
	listed   map[string]map[string]iofs.FileInfo
	listedAt time.Time
	// dirs are the directories files are written in, open.
	dirs restoreDirs
	res  RestoreResult
	done bool
	// resMu guards reserved and each file's tmp: files[:reserved] had
	// their temporary names recorded in the journal (see reserve).
	resMu    sync.Mutex
	reserved int
	// old and oldBytes, guarded by held's lock, are the files the
	// restore renamed over, held open (holdOld) so that they are freed
	// when the restore has ended (releaseOld), not in each rename on
	// the delivery's path; within the agent's bounds (held).
	old      []*os.File
	oldBytes int64
}

// maxListingAge is how old the survey's and the plan's listings may be
// at a restore's commit for its delete walk to go by them (a restore of
// a change, as an incremental carry's, commits well within it): a file
// made on the target after its directory was listed stays, as one made
// just after the commit would. Past it (a long restore: a first carry)
// the walk reads every directory again, and removes what a process made
// meanwhile too. A variable for tests.
var maxListingAge = time.Second

// maxHeldOld and maxHeldOldBytes bound what the restores running hold
// of the files they replaced (see Restore.old), all of them together (a
// pool agent runs several sessions' carries at once): an incremental
// carry's few files, not a whole tree's worth of descriptors or disk
// space, nor the agent's open files up to its limit. Variables for tests.
var (
	maxHeldOld            = 1024
	maxHeldOldBytes int64 = 64 << 20
)

// held is what the restores running hold of the files they replaced,
// within maxHeldOld and maxHeldOldBytes; a restore's are counted until it
// ends (their closes, on a goroutine, follow at once). Its lock guards
// each restore's old and oldBytes too, so that the count is always
// theirs summed.
var held struct {
	sync.Mutex
	files int
	bytes int64
}

// reserveBytes is about how much of the journal one batch of a restore's
// temporary names takes (one write, one sync): the names of a tree of
// tens of thousands of files in one batch, the journal kept far below
// maxJournalSize. A variable for tests.
var reserveBytes = 2 << 20

// restoreFile is one file the restore writes.
type restoreFile struct {
	mu      sync.Mutex // up, pending, written during Puts
	e       *SnapEntry
	c       string           // root-relative
	idx     int              // in Restore.files
	tmp     string           // its temporary name, reserved in the journal and not yet used
	opened  bool             // reserve was called for it (tmp, opened: Restore.resMu)
	local   map[Sum]chunkLoc // chunks to copy from what is on disk
	up      *Upload
	dir     *restoreDir // c's directory, held while up is open
	pending int         // chunks still to come
	written bool
	// oldSize is the size of the regular file at c when planned, -1
	// when there was none (nothing to hold at the rename).
	oldSize int64
}

// restorePlace is where a chunk goes: a file and an offset.
type restorePlace struct {
	f    *restoreFile
	off  int64
	size uint32
}

// BeginRestore checks entries (hostile ones are refused before anything
// is written: see checkManifest), makes the directories of the manifest
// under p (replacing a file or symlink in their way), and works out which
// files to write and which chunks are missing: a chunk is found locally
// in the file's own old version, or in a file the restore leaves as it is.
func (f *FS) BeginRestore(ctx context.Context, p string, entries []SnapEntry, opts RestoreOptions) (*Restore, error) {
	base, err := Clean(p)
	if err != nil {
		return nil, err
	}
	if isTemp(base) {
		return nil, tempReserved("restore", base)
	}
	if err := checkManifest(entries); err != nil {
		return nil, err
	}
	for i := range entries {
		full := join(base, entries[i].Path)
		if f.hidden(full) {
			return nil, errorf(ErrDenied, "snapshot entry %s: %s is a path the machine owner's policy denies", entries[i].Path, full)
		}
		if err := f.writeCheck(full); err != nil {
			return nil, fmt.Errorf("snapshot entry %s: %w", entries[i].Path, err)
		}
	}
	if err := f.root.MkdirAll(native(base), dirMode); err != nil {
		return nil, mapErr("restore", base, err)
	}
	r := &Restore{fs: f, base: base, opts: opts, entries: entries, want: map[Sum][]restorePlace{}, dirs: restoreDirs{fs: f, base: base}, listedAt: time.Now()}
	if opts.Survey != nil {
		if r.listed = opts.Survey.take(base); r.listed != nil {
			r.listedAt = opts.Survey.at
		}
		r.opts.Survey = nil
	}
	for i := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if e := &entries[i]; e.Type == TypeDir {
			if err := r.makeDir(join(base, e.Path)); err != nil {
				return nil, err
			}
		}
	}
	shared := map[Sum]chunkLoc{}
	for i := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if e := &entries[i]; e.Type == TypeFile {
			if err := r.planFile(e, shared); err != nil {
				return nil, err
			}
		}
	}
	r.planChunks(shared)
	if !opts.Delete {
		r.listed = nil
	}
	return r, nil
}

// makeDir makes directory c, removing a non-directory in its way.
func (r *Restore) makeDir(c string) error {
	fi, err := r.fs.root.Lstat(native(c))
	if err == nil && fi.IsDir() {
		return nil
	}
	if err == nil {
		if err := r.fs.root.Remove(native(c)); err != nil {
			return mapErr("restore", c, err)
		}
	}
	return mapErr("restore", c, r.fs.root.MkdirAll(native(c), dirMode))
}

// lstat is root-relative c's Lstat, from a listing of its directory
// taken once for all the files of the manifest there (by fstatat, not a
// walk of every path from the root).
func (r *Restore) lstat(c string) (iofs.FileInfo, error) {
	dir, name := path.Split(c)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	list, ok := r.listed[dir]
	if !ok {
		infos, err := r.fs.readDir(dir)
		if err != nil {
			return r.fs.root.Lstat(native(c))
		}
		list = make(map[string]iofs.FileInfo, len(infos))
		for _, fi := range infos {
			list[fi.Name()] = fi
		}
		if r.listed == nil {
			r.listed = map[string]map[string]iofs.FileInfo{}
		}
		r.listed[dir] = list
	}
	if fi, ok := list[name]; ok {
		return fi, nil
	}
	return nil, iofs.ErrNotExist
}

// planFile compares file entry e with what is on disk.
func (r *Restore) planFile(e *SnapEntry, shared map[Sum]chunkLoc) error {
	r.res.Files++
	r.res.Bytes += e.Size
	c := join(r.base, e.Path)
	rf := &restoreFile{e: e, c: c, idx: len(r.files), oldSize: -1}
	fi, err := r.lstat(c)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
	case err != nil:
		return mapErr("restore", c, err)
	case fi.IsDir():
		if err := r.fs.root.RemoveAll(native(c)); err != nil {
			return mapErr("restore", c, err)
		}
	case fi.Mode().IsRegular():
		old, err := r.fs.chunkFile(c, fi)
		if err != nil {
			return err
		}
		if slices.Equal(old, e.Chunks) {
			if uint32(fi.Mode().Perm()) != e.Mode || fi.ModTime().UnixNano() != e.ModTime {
				r.same = append(r.same, e) // its mode or time to set
			}
			var off int64
			for _, ch := range old {
				shared[ch.Sum] = chunkLoc{path: c, off: off, size: ch.Size}
				off += int64(ch.Size)
			}
			return nil
		}
		rf.oldSize = fi.Size()
		rf.local = map[Sum]chunkLoc{}
		var off int64
		for _, ch := range old {
			rf.local[ch.Sum] = chunkLoc{path: c, off: off, size: ch.Size}
			off += int64(ch.Size)
		}
	}
	r.files = append(r.files, rf)
	return nil
}

// planChunks decides, for every file to write, which chunks are copied
// from disk and which must come (want, lack).
func (r *Restore) planChunks(shared map[Sum]chunkLoc) {
	for _, rf := range r.files {
		var off int64
		for _, ch := range rf.e.Chunks {
			if _, ok := rf.local[ch.Sum]; !ok {
				if loc, ok := shared[ch.Sum]; ok {
					if rf.local == nil {
						rf.local = map[Sum]chunkLoc{}
					}
					rf.local[ch.Sum] = loc
				}
			}
			if _, ok := rf.local[ch.Sum]; !ok {
				if _, seen := r.want[ch.Sum]; !seen {
					r.lack = append(r.lack, ch.Sum)
				}
				r.want[ch.Sum] = append(r.want[ch.Sum], restorePlace{f: rf, off: off, size: ch.Size})
				rf.pending++
			}
			off += int64(ch.Size)
		}
	}
}

// Lack is the chunks the restore needs, each once, in manifest order.
func (r *Restore) Lack() []Sum { return r.lack }

// Files is how many files the restore writes.
func (r *Restore) Files() int { return len(r.files) }

// Put delivers chunk sum: it is written wherever the manifest has it, and
// each file whose last chunk it was is committed. A chunk not wanted (or
// delivered twice) is ignored.
func (r *Restore) Put(sum Sum, data []byte) error {
	return r.PutAll([]Sum{sum}, []uint32{uint32(len(data))}, data)
}

// PutAll delivers chunks sums, whose sizes are sizes, one after the other
// in data: it is Put of each in order, but chunks that follow each other
// in data and in one file (a first restore gets a file's chunks in order)
// are written to it with one write, not one per chunk. The sizes are all
// checked against the manifest before anything is written. On an error,
// the chunks not written are wanted again.
func (r *Restore) PutAll(sums []Sum, sizes []uint32, data []byte) error {
	var total int
	for _, n := range sizes {
		total += int(n)
	}
	if len(sums) != len(sizes) || total != len(data) {
		return errorf(iofs.ErrInvalid, "restore %s: %d chunks, %d sizes, %d bytes for %d", r.base, len(sums), len(sizes), len(data), total)
	}
	r.ops.RLock()
	defer r.ops.RUnlock()
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return errorf(ErrUploadDone, "restore %s: already finished", r.base)
	}
	for i, sum := range sums {
		// Every place: a manifest may give one chunk two sizes, and
		// the data written at a place is the chunk's whole size.
		for _, pl := range r.want[sum] {
			if pl.size != sizes[i] {
				r.mu.Unlock()
				return errorf(ErrChecksumMismatch, "restore %s: chunk %x has %d bytes, the manifest says %d", r.base, sum[:8], sizes[i], pl.size)
			}
		}
	}
	places := make([][]restorePlace, len(sums))
	for i, sum := range sums {
		places[i] = r.want[sum]
		delete(r.want, sum)
	}
	r.mu.Unlock()
	if err := r.writePlaces(places, sizes, data); err != nil {
		// The places not written are wanted again: a chunk that never
		// reached a file stays wanted, and Commit refuses a restore
		// that lacks it, rather than commit the file with a hole.
		r.mu.Lock()
		for i, pls := range places {
			if len(pls) > 0 {
				r.want[sums[i]] = append(r.want[sums[i]], pls...)
			}
		}
		r.mu.Unlock()
		return err
	}
	return nil
}

// writePlaces writes chunks of sizes, one after the other in data, at
// their places (places[i] is chunk i's), and commits each file whose
// last chunks they were; chunks that follow each other in data and in
// one file are written with one write. As it goes it empties places[i]
// of the places chunk i was written at: on an error, places holds those
// not written.
func (r *Restore) writePlaces(places [][]restorePlace, sizes []uint32, data []byte) error {
	// run is the chunks taken so far to go to file f at off in one
	// write, data[rd:rd+n]: chunks from first on with one place each,
	// each right after the one before it in data and in f. Any other
	// chunk ends it (its data is then no longer right after the run's).
	var run struct {
		f      *restoreFile
		off    int64
		rd, n  int
		first  int
		chunks int
	}
	flush := func() error {
		if run.chunks == 0 {
			return nil
		}
		wrote, err := r.place(run.f, run.off, data[run.rd:run.rd+run.n], run.chunks)
		if wrote {
			for j := run.first; j < run.first+run.chunks; j++ {
				places[j] = nil
			}
		}
		run.chunks = 0
		return err
	}
	d := 0
	for i, pls := range places {
		n := int(sizes[i])
		if len(pls) == 1 && run.chunks > 0 && pls[0].f == run.f && pls[0].off == run.off+int64(run.n) {
			run.n += n
			run.chunks++
			d += n
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		switch len(pls) {
		case 0:
		case 1:
			run.f, run.off, run.rd, run.n, run.first, run.chunks = pls[0].f, pls[0].off, d, n, i, 1
		default:
			for len(places[i]) > 0 {
				pl := places[i][0]
				wrote, err := r.place(pl.f, pl.off, data[d:d+n], 1)
				if wrote {
					places[i] = places[i][1:]
				}
				if err != nil {
					return err
				}
			}
		}
		d += n
	}
	return flush()
}

// place writes data, chunks of rf's, at off of rf, and commits rf when
// they were its last. wrote is whether data was written (an error after
// that is the file's commit's).
func (r *Restore) place(rf *restoreFile, off int64, data []byte, chunks int) (wrote bool, err error) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if err := r.open(rf); err != nil {
		return false, err
	}
	if placeHook != nil {
		if err := placeHook(rf.c); err != nil {
			return false, err
		}
	}
	if _, err := rf.up.WriteAt(data, off); err != nil {
		return false, err
	}
	if rf.pending -= chunks; rf.pending == 0 {
		// Its writeback begins now, so Commit's sync of the whole
		// file system has little left to wait for (all writes to rf
		// are done under rf.mu, held here).
		startWriteback(rf.up.file, 0, rf.e.Size)
		return true, r.commitFile(rf)
	}
	return true, nil
}

// placeHook, when set (tests only), is called before each write of a
// restore's chunks to root-relative file c; an error it returns is the
// write's.
var placeHook func(c string) error

// open begins rf's write and copies its local chunks in.
func (r *Restore) open(rf *restoreFile) error {
	if rf.up != nil {
		return nil
	}
	e := rf.e
	d, err := r.dirs.acquire(path.Dir(rf.c))
	if err != nil {
		return err
	}
	up, err := r.fs.beginWriteIn(d.root, rf.c, r.reserve(rf), WriteOptions{Mode: os.FileMode(e.Mode) & os.ModePerm, Overwrite: true,
		NoSync: canSyncAll, NoHash: true, ModTime: time.Unix(0, e.ModTime)})
	if err != nil {
		r.dirs.release(d)
		return err
	}
	// Checked again just before the rename: an os.Root follows its
	// directory wherever it is moved, out of the root too.
	dc := path.Dir(rf.c)
	up.dirCheck = func() error { return r.dirs.verify(dc, d) }
	var off int64
	var buf []byte
	for _, ch := range e.Chunks {
		if loc, ok := rf.local[ch.Sum]; ok {
			if buf, err = r.fs.appendChunk(buf[:0], loc, ch.Sum); err == nil {
				_, err = up.WriteAt(buf, off)
			}
			if err != nil {
				// Not begun: a later delivery begins it again
				// (never writes the rest of a file whose local
				// chunks are not all in, leaving holes there).
				r.discard(up, rf.c, d)
				r.dirs.release(d)
				return err
			}
		}
		off += int64(ch.Size)
	}
	rf.up, rf.dir = up, d
	return nil
}

// reserve returns rf's temporary name, recorded in the journal: when the
// FS has a journal and rf's name is not reserved yet, the names of the
// next files of the plan, up to about reserveBytes of records, are picked
// and recorded with one write and one sync, instead of one per file (on
// macOS a sync is an F_FULLFSYNC, milliseconds). A file opened out of
// order, beyond that batch (a chunk it shares with an earlier file), gets
// "" and createTemp records its name alone: a batch stays small however
// far it is, so the journal stays far below maxJournalSize. "" too
// without a journal.
func (r *Restore) reserve(rf *restoreFile) string {
	j := r.fs.journalOf()
	if j == nil {
		return ""
	}
	r.resMu.Lock()
	defer r.resMu.Unlock()
	if rf.idx >= r.reserved && !rf.opened {
		var names []string
		var n int64
		i := r.reserved
		for ; i < len(r.files) && n < int64(reserveBytes); i++ {
			if f := r.files[i]; !f.opened {
				f.tmp = tempName(path.Dir(f.c))
				names = append(names, f.tmp)
				n += recordSize(f.tmp)
			}
		}
		j.addAll(names)
		r.reserved = i
	}
	tmp := rf.tmp
	rf.tmp, rf.opened = "", true
	return tmp
}

// unreserve forgets the reserved names no file used (a restore that
// ends before it opened them all), with one write.
func (r *Restore) unreserve() {
	r.resMu.Lock()
	defer r.resMu.Unlock()
	var names []string
	for _, rf := range r.files[:r.reserved] {
		if rf.tmp != "" {
			names = append(names, rf.tmp)
			rf.tmp = ""
		}
	}
	if len(names) > 0 {
		r.fs.forgetTemps(names)
	}
}

// commitFile renames rf into place and caches its chunks.
func (r *Restore) commitFile(rf *restoreFile) error {
	d := rf.dir
	if d == nil { // committed or failed before
		_, err := rf.up.CommitVerified(rf.e.Size, "")
		return err
	}
	defer func() {
		r.dirs.release(d)
		rf.dir = nil
	}()
	r.holdOld(rf, d)
	if _, err := rf.up.CommitVerified(rf.e.Size, ""); err != nil {
		return err
	}
	rf.written = true
	if fi, err := d.root.Lstat(path.Base(rf.c)); err == nil {
		r.fs.cache().store(rf.c, fi, rf.e.Chunks)
	}
	return nil
}

// holdOld holds the file rf replaces, in directory d, open until the
// restore ends (see Restore.old), within the bounds.
func (r *Restore) holdOld(rf *restoreFile, d *restoreDir) {
	if rf.oldSize < 0 {
		return
	}
	held.Lock()
	defer held.Unlock()
	if held.files >= maxHeldOld || held.bytes+rf.oldSize > maxHeldOldBytes {
		return
	}
	if f := holdOld(d.root, path.Base(rf.c)); f != nil {
		r.old = append(r.old, f)
		r.oldBytes += rf.oldSize
		held.files++
		held.bytes += rf.oldSize
	}
}

// releaseOld closes the replaced files held open, which frees them, on a
// goroutine of its own that ends when they are closed: the restore's
// Commit answers without waiting for the file system to free them.
func (r *Restore) releaseOld() {
	held.Lock()
	old := r.old
	held.files -= len(old)
	held.bytes -= r.oldBytes
	r.old, r.oldBytes = nil, 0
	held.Unlock()
	if len(old) == 0 {
		return
	}
	go func() {
		for _, f := range old {
			f.Close()
		}
	}()
}

// Commit writes the files made only of local chunks and the symlinks,
// sets the modes and times of files, removes what the manifest lacks
// (Delete: by the survey's and the plan's listings while they are
// younger than maxListingAge, else by reading every directory again),
// then sets the directories' modes and times, and syncs. A chunk never
// delivered is an error.
func (r *Restore) Commit(ctx context.Context) (RestoreResult, error) {
	r.ops.Lock()
	defer r.ops.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return r.res, errorf(ErrUploadDone, "restore %s: already finished", r.base)
	}
	r.done = true
	defer r.abortLocked()
	if len(r.want) > 0 {
		return r.res, errorf(iofs.ErrInvalid, "restore %s: %d chunks were never delivered", r.base, len(r.want))
	}
	for _, rf := range r.files {
		if err := ctx.Err(); err != nil {
			return r.res, err
		}
		if rf.written {
			continue
		}
		if err := r.open(rf); err != nil {
			return r.res, err
		}
		if err := r.commitFile(rf); err != nil {
			return r.res, err
		}
	}
	for _, rf := range r.files {
		if rf.written {
			r.res.Written++
		}
	}
	if err := r.finishEntries(); err != nil {
		return r.res, err
	}
	// What the manifest lacks goes before the directories get their
	// modes and times: a removal sets its directory's time.
	var seen map[string]iofs.FileInfo
	if r.opts.Delete {
		if time.Since(r.listedAt) > maxListingAge {
			r.listed = nil // the walk reads every directory again
		}
		seen = map[string]iofs.FileInfo{}
		if err := r.removeExtra(ctx, r.base, r.index(), seen); err != nil {
			return r.res, err
		}
	}
	if err := r.finishDirs(seen); err != nil {
		return r.res, err
	}
	return r.res, r.fs.syncAll(r.base)
}

// finishEntries makes symlinks, and sets the modes and times of files
// already right.
func (r *Restore) finishEntries() error {
	for i := range r.entries {
		e := &r.entries[i]
		if e.Type != TypeSymlink {
			continue
		}
		c := join(r.base, e.Path)
		if cur, err := r.fs.root.Readlink(native(c)); err == nil && strings.ReplaceAll(cur, "\\", "/") == e.Link {
			continue
		}
		u := &unpack{f: r.fs, dest: r.base, links: map[string]bool{}}
		if err := u.symlink(e.Path, c, e.Link); err != nil {
			return err
		}
	}
	for _, e := range r.same {
		if err := r.setAttrs(join(r.base, e.Path), e, nil); err != nil {
			return err
		}
	}
	return nil
}

// finishDirs sets the modes and times of the directories, deepest first
// (after their content). seen holds the stat of directories the delete
// walk took once it was done with them (fstat of the directory it had
// open), so they are not looked up again by path.
func (r *Restore) finishDirs(seen map[string]iofs.FileInfo) error {
	for i := len(r.entries) - 1; i >= 0; i-- {
		if e := &r.entries[i]; e.Type == TypeDir {
			c := join(r.base, e.Path)
			if err := r.setAttrs(c, e, seen[c]); err != nil {
				return err
			}
		}
	}
	return nil
}

// setAttrs gives c the entry's mode and time where they differ; fi, when
// not nil, is c's stat already taken.
func (r *Restore) setAttrs(c string, e *SnapEntry, fi iofs.FileInfo) error {
	if fi == nil {
		var err error
		if fi, err = r.fs.root.Lstat(native(c)); err != nil {
			return mapErr("restore", c, err)
		}
	}
	if uint32(fi.Mode().Perm()) != e.Mode {
		if err := r.fs.root.Chmod(native(c), os.FileMode(e.Mode)); err != nil {
			return mapErr("restore", c, err)
		}
	}
	if fi.ModTime().UnixNano() != e.ModTime {
		mt := time.Unix(0, e.ModTime)
		if err := r.fs.root.Chtimes(native(c), mt, mt); err != nil {
			return mapErr("restore", c, err)
		}
		if e.Type == TypeFile {
			if nfi, err := r.fs.root.Lstat(native(c)); err == nil {
				r.fs.cache().store(c, nfi, e.Chunks)
			}
		}
	}
	return nil
}

// removeExtra removes what lies under directory c and is not in the
// manifest; the agent's temporary files are left to their owners. A
// directory is opened, when it must be read or has extras to remove, as
// the restore's writes open theirs (restoreDirs: from its parent's by
// name, after an Lstat there shows a directory), and its extras are
// removed by name in it: a directory of the manifest replaced by a
// symlink since BeginRestore is refused (ErrUnsafeEntry), never walked
// through, wherever the link points. The stat of each directory opened,
// once its entries are removed, goes in seen (an fstat of the directory
// it has open, not a second walk of its path).
func (r *Restore) removeExtra(ctx context.Context, c string, keep map[string]string, seen map[string]iofs.FileInfo) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	names, d, err := r.namesIn(c)
	if err != nil {
		return err
	}
	defer func() {
		if d != nil {
			r.dirs.release(d)
		}
	}()
	var subs []string
	for _, n := range names {
		if strings.HasPrefix(n, TempPrefix) {
			continue
		}
		p := join(c, n)
		if r.fs.hidden(p) {
			continue // the owner's: never removed
		}
		t, ok := keep[rel(r.base, p)]
		switch {
		case !ok:
			if d == nil {
				if d, err = r.dirs.acquire(c); err != nil {
					return err
				}
			}
			gone, err := r.remove(d, p)
			if err != nil {
				return err
			}
			if gone {
				r.res.Removed++
			}
		case t == TypeDir:
			subs = append(subs, p)
		}
	}
	// c is done with (what goes into it went before the commit, and
	// its subdirectories' removals do not touch it).
	if d != nil {
		if fi, err := d.root.Stat("."); err == nil && fi.IsDir() {
			seen[c] = fi
		}
		r.dirs.release(d)
		d = nil
	}
	for _, p := range subs {
		if err := r.removeExtra(ctx, p, keep, seen); err != nil {
			return err
		}
	}
	return nil
}

// namesIn is the names in directory c for the delete walk: its listing
// when the survey or the plan took one (what is there now but was not
// then came while the restore ran, as a file written just after its
// commit would: rsync --delete too works from the listing it took
// first), with d nil; else what c holds now, read from c opened as the
// writes open theirs, with d that directory, held.
func (r *Restore) namesIn(c string) (names []string, d *restoreDir, err error) {
	if list, ok := r.listed[c]; ok {
		names = make([]string, 0, len(list))
		for n := range list {
			names = append(names, n)
		}
		return names, nil, nil
	}
	if listHook != nil {
		listHook(c)
	}
	if d, err = r.dirs.acquire(c); err != nil {
		return nil, nil, err
	}
	f, err := d.root.Open(".")
	if err == nil {
		names, err = f.Readdirnames(-1)
		f.Close()
	}
	if err != nil {
		r.dirs.release(d)
		return nil, nil, mapErr("restore", c, err)
	}
	return names, d, nil
}

// remove removes p, an entry of directory d, and what is under it; gone
// is false when nothing was there (an entry listed earlier and removed
// since).
func (r *Restore) remove(d *restoreDir, p string) (gone bool, err error) {
	if err := r.dirs.verify(path.Dir(p), d); err != nil {
		return false, err
	}
	n := path.Base(p)
	err = d.root.Remove(n)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, iofs.ErrNotExist):
		return false, nil
	}
	if err := d.root.RemoveAll(n); err != nil {
		return false, mapErr("restore", p, err)
	}
	return true, nil
}

// index maps the manifest's paths to their types.
func (r *Restore) index() map[string]string {
	m := make(map[string]string, len(r.entries))
	for _, e := range r.entries {
		m[e.Path] = e.Type
	}
	return m
}

// discard ends up, the write of file c begun in directory d (nil when
// no longer held), without renaming it: its temporary file is removed,
// unless c's directory moved away (perhaps out of the root) since d was
// opened, where nothing is removed by name (the file is closed and
// forgotten by the journal).
func (r *Restore) discard(up *Upload, c string, d *restoreDir) {
	if d != nil && r.dirs.verify(path.Dir(c), d) != nil {
		up.abandon()
		return
	}
	up.Abort()
}

// Abort discards the files being written; those already renamed stay.
func (r *Restore) Abort() {
	r.ops.Lock()
	defer r.ops.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	r.abortLocked()
}

// abortLocked ends the restore, at Commit's end as at Abort (r.ops and
// r.mu held): the files not renamed into place are discarded, the names
// reserved and unused forgotten, its directories closed, and the files
// it replaced let go (releaseOld).
func (r *Restore) abortLocked() {
	for _, rf := range r.files {
		if rf.up != nil && !rf.written {
			r.discard(rf.up, rf.c, rf.dir)
		}
	}
	r.unreserve()
	r.dirs.closeAll()
	r.releaseOld()
}
