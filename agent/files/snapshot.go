package files

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/outposthq/outpost/internal/cdc"
)

// Snapshots: a tree described as a manifest of entries whose files are
// lists of content-defined chunks (internal/cdc), each named by its
// SHA-256. Scan makes the manifest of a tree and serves the chunks the
// control plane's store lacks; BeginRestore makes a tree match a manifest,
// asking only for the chunks it cannot find in what it has. Both keep a
// cache of the chunks of the files they saw (by path, size, time and
// inode), so an unchanged file is not read again.

// ErrSourceChanged: a file changed between its scan and the read of its
// chunks; the snapshot must be taken again.
var ErrSourceChanged = errors.New("source changed during the snapshot")

// Sum is a chunk's SHA-256.
type Sum = [sha256.Size]byte

// Chunk is one piece of a file's content.
type Chunk struct {
	Sum  Sum
	Size uint32
}

// SnapEntry is one file, directory or symlink of a snapshot.
type SnapEntry struct {
	// Path is slash-separated, relative to the snapshot's directory, never ".".
	Path string
	// Type is TypeFile, TypeDir or TypeSymlink.
	Type string
	// Mode holds the permission bits.
	Mode uint32
	// Size is a file's length; ModTime its modification time (Unix ns).
	Size    int64
	ModTime int64
	// Link is a symlink's target as stored.
	Link string
	// Chunks are a file's content in order.
	Chunks []Chunk
}

// ScanOptions choose what a scan includes.
type ScanOptions struct {
	// Exclude are globs of paths left out (with their contents): one with
	// a / matches the path from the scanned directory, one without any
	// base name.
	Exclude []string
	// Gitignore leaves out what .gitignore files exclude.
	Gitignore bool
}

// cachedFile is what the chunk cache knows of one file.
type cachedFile struct {
	size, mtime int64
	ino         uint64
	chunks      []Chunk
}

// chunkCache maps root-relative paths to the chunks of the file last seen
// there. It lives as long as the FS.
type chunkCache struct {
	mu    sync.Mutex
	files map[string]cachedFile
}

func (f *FS) cache() *chunkCache {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.chunks == nil {
		f.chunks = &chunkCache{files: map[string]cachedFile{}}
	}
	return f.chunks
}

// lookup returns c's chunks if fi still describes the file cached there.
func (cc *chunkCache) lookup(c string, fi iofs.FileInfo) ([]Chunk, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cf, ok := cc.files[c]
	if !ok || cf.size != fi.Size() || cf.mtime != fi.ModTime().UnixNano() || cf.ino != inode(fi) {
		return nil, false
	}
	return cf.chunks, true
}

func (cc *chunkCache) store(c string, fi iofs.FileInfo, chunks []Chunk) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.files[c] = cachedFile{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: inode(fi), chunks: chunks}
}

// chunkFile splits root-relative file c into chunks, from the cache when
// its stat matches; fi is its Lstat.
func (f *FS) chunkFile(c string, fi iofs.FileInfo) ([]Chunk, error) {
	cc := f.cache()
	if chunks, ok := cc.lookup(c, fi); ok {
		return chunks, nil
	}
	file, err := f.openRead(c)
	if err != nil {
		return nil, mapErr("snapshot", c, err)
	}
	defer file.Close()
	ofi, err := file.Stat()
	if err != nil || !ofi.Mode().IsRegular() {
		return nil, errorf(ErrSourceChanged, "snapshot %s: no longer a regular file", c)
	}
	var chunks []Chunk
	err = cdc.Default.Split(file, func(b []byte) error {
		chunks = append(chunks, Chunk{Sum: sha256.Sum256(b), Size: uint32(len(b))})
		return nil
	})
	if err != nil {
		return nil, mapErr("snapshot", c, err)
	}
	after, err := file.Stat()
	if err != nil || after.Size() != ofi.Size() || !after.ModTime().Equal(ofi.ModTime()) {
		return nil, errorf(ErrSourceChanged, "snapshot %s: the file changed while it was read", c)
	}
	cc.store(c, after, chunks)
	return chunks, nil
}

// chunkLoc is where a chunk can be read: a root-relative file and offset.
type chunkLoc struct {
	path string
	off  int64
	size uint32
}

// Scan is the manifest of a tree and where its chunks are.
type Scan struct {
	fs      *FS
	Entries []SnapEntry
	// Files and Bytes count the regular files and their content.
	Files int
	Bytes int64
	loc   map[Sum]chunkLoc
	// hash is where the walk sends the files the cache does not know,
	// to be chunked while it goes on (chunkAll); nil: none of that.
	hash chan<- hashJob
}

// hashJob is one file of a scan to read and chunk: entry i, root-relative
// c, with its Lstat from the walk.
type hashJob struct {
	i  int
	c  string
	fi iofs.FileInfo
}

// Scan walks directory p (never through symlinks, skipping the agent's
// temporary files, the paths SetHidden hides and what opts exclude) and chunks every regular file,
// several at a time (see chunkAll). Special files are left out.
func (f *FS) Scan(ctx context.Context, p string, opts ScanOptions) (*Scan, error) {
	base, err := Clean(p)
	if err != nil {
		return nil, err
	}
	var globs []*pathGlob
	for _, g := range opts.Exclude {
		pg, err := compileGlob(g)
		if err != nil {
			return nil, err
		}
		if pg != nil {
			globs = append(globs, pg)
		}
	}
	fi, err := f.root.Lstat(native(base))
	if err != nil {
		return nil, mapErr("snapshot", base, err)
	}
	if !fi.IsDir() {
		return nil, errorf(iofs.ErrInvalid, "snapshot %s: not a directory", base)
	}
	var ig *ignorer
	if opts.Gitignore {
		ig = f.ancestorIgnores(base)
	}
	s := &Scan{fs: f, loc: map[Sum]chunkLoc{}}
	err = f.chunkAll(ctx, s, base, func(ctx context.Context) error {
		l := f.newDirLister(ctx)
		defer l.stop()
		return f.scanDir(ctx, s, l, base, base, nil, nil, ig, globs)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// rel is c relative to base.
func rel(base, c string) string {
	if base == "." {
		return c
	}
	return strings.TrimPrefix(c, base+"/")
}

// scanDir adds the entries under directory c, which was fi when its
// parent was listed (nil: the scan's base); pre, when not nil, is its
// listing begun ahead (l.start).
func (f *FS) scanDir(ctx context.Context, s *Scan, l *dirLister, base, c string, fi iofs.FileInfo, pre *dirListing, ig *ignorer, globs []*pathGlob) error {
	if err := ctx.Err(); err != nil {
		pre.drop()
		return err
	}
	if ig != nil {
		ig = ig.load(f, c)
	}
	var infos []iofs.FileInfo
	var err error
	if pre != nil {
		infos, err = pre.wait()
	} else {
		infos, err = f.readDirOf(c, fi)
	}
	if err != nil {
		return mapErr("snapshot", c, err)
	}
	// Which entries are left out is decided first, and the directories
	// the walk goes into are listed ahead (l.start), while it goes
	// through what comes before them: the lstat of every entry, most of
	// a walk's time, runs on more than one CPU.
	paths := make([]string, len(infos)) // "": left out
	subs := make([]*dirListing, len(infos))
	defer func() {
		for _, d := range subs {
			d.drop() // those a failure left unread
		}
	}()
	for i, fi := range infos {
		n := fi.Name()
		p := join(c, n)
		if strings.HasPrefix(n, TempPrefix) || f.hidden(p) || excluded(p, base, fi.IsDir(), ig, globs) {
			continue
		}
		paths[i] = p
		if fi.IsDir() {
			subs[i] = l.start(p, fi)
		}
	}
	for i, fi := range infos {
		p := paths[i]
		if p == "" {
			continue
		}
		e := SnapEntry{Path: rel(base, p), Mode: uint32(fi.Mode().Perm()), ModTime: fi.ModTime().UnixNano()}
		switch m := fi.Mode(); {
		case m.IsDir():
			e.Type = TypeDir
			s.Entries = append(s.Entries, e)
			sub := subs[i]
			subs[i] = nil
			if err := f.scanDir(ctx, s, l, base, p, fi, sub, ig, globs); err != nil {
				return err
			}
		case m&iofs.ModeSymlink != 0:
			link, err := f.root.Readlink(native(p))
			if err != nil {
				return mapErr("snapshot", p, err)
			}
			e.Type, e.Link = TypeSymlink, strings.ReplaceAll(link, "\\", "/")
			s.Entries = append(s.Entries, e)
		case m.IsRegular():
			e.Type, e.Size = TypeFile, fi.Size()
			chunks, ok := f.cache().lookup(p, fi)
			if ok {
				e.Chunks = chunks
			}
			s.Entries = append(s.Entries, e)
			if !ok {
				select {
				case s.hash <- hashJob{i: len(s.Entries) - 1, c: p, fi: fi}:
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			}
		}
	}
	return nil
}

// dirLister lists directories of a walk ahead of it, on goroutines of its
// own: at most slots listings are under way or waiting to be read at
// once (a directory with no slot free is listed by the walk itself when
// it gets there), so what is held ahead stays small whatever the tree.
// Its goroutines end by stop.
type dirLister struct {
	f     *FS
	ctx   context.Context
	slots chan struct{}
	wg    sync.WaitGroup
}

// dirListing is one directory listed ahead: its entries once done is
// closed. Its slot is given back when it is read (wait) or dropped.
type dirListing struct {
	l     *dirLister
	done  chan struct{}
	infos []iofs.FileInfo
	err   error
	freed bool
}

// listAhead is how many directories a walk lists ahead at most: one per
// CPU, at least two, at most eight.
func listAhead() int { return min(max(runtime.GOMAXPROCS(0), 2), 8) }

func (f *FS) newDirLister(ctx context.Context) *dirLister {
	return &dirLister{f: f, ctx: ctx, slots: make(chan struct{}, listAhead())}
}

// start lists directory c (fi when its parent was listed) ahead, or
// returns nil when no slot is free.
func (l *dirLister) start(c string, fi iofs.FileInfo) *dirListing {
	select {
	case l.slots <- struct{}{}:
	default:
		return nil
	}
	d := &dirListing{l: l, done: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(d.done)
		if d.err = l.ctx.Err(); d.err == nil {
			d.infos, d.err = l.f.readDirOf(c, fi)
		}
	}()
	return d
}

// wait returns the listing and gives its slot back.
func (d *dirListing) wait() ([]iofs.FileInfo, error) {
	<-d.done
	d.free()
	return d.infos, d.err
}

// drop gives the slot of a listing that will not be read back (nil: none).
func (d *dirListing) drop() {
	if d != nil {
		d.free()
	}
}

func (d *dirListing) free() {
	if !d.freed {
		d.freed = true
		<-d.l.slots
	}
}

// stop waits for the listings under way; call it once the walk is over.
func (l *dirLister) stop() { l.wg.Wait() }

// readDir lists directory c with each entry's Lstat, sorted by name. The
// stats are taken relative to the open directory (fstatat), not by a walk
// of each path from the root: a tree of 10,000 files is stat'ed in a
// fraction of the time.
func (f *FS) readDir(c string) ([]iofs.FileInfo, error) { return f.readDirOf(c, nil) }

// listHook, when set (tests only, before a scan starts), is called with
// each directory readDirOf lists, before it is opened, and each one a
// restore's delete walk reads (removeExtra); it may be called from
// several goroutines at once.
var listHook func(c string)

// readDirOf is readDir of directory c, which was want when its parent
// was listed (nil: not checked). The root's Open follows a symlink inside
// the root: a directory replaced since by a link to another (or by
// anything else) is ErrSourceChanged, never listed in its place. The
// walk lists directories ahead of it, so this is what keeps it off links.
func (f *FS) readDirOf(c string, want iofs.FileInfo) ([]iofs.FileInfo, error) {
	if listHook != nil {
		listHook(c)
	}
	d, err := f.root.Open(native(c))
	if err != nil {
		return nil, err
	}
	if want != nil {
		st, err := d.Stat()
		if err != nil {
			d.Close()
			return nil, err
		}
		if !sameDir(want, st) {
			d.Close()
			return nil, errorf(ErrSourceChanged, "snapshot %s: no longer the directory listed", c)
		}
	}
	infos, err := d.Readdir(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(infos, func(a, b iofs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	return infos, nil
}

// excluded reports whether p is left out by .gitignore rules or globs.
func excluded(p, base string, isDir bool, ig *ignorer, globs []*pathGlob) bool {
	if ig != nil && ig.ignored(p, isDir) {
		return true
	}
	for _, g := range globs {
		if g.match(p, base) {
			return true
		}
	}
	return false
}

// chunkAll runs walk, which lists the tree into s (a file the chunk
// cache knows by its stat gets its chunks from there), and chunks the
// other files while it goes on: one worker per CPU but one, and at least
// two. The agent keeps a CPU for its other calls and its heartbeats
// while it hashes a large tree, but a two-CPU machine hashes on both (the
// scheduler preempts them for the heartbeats; one alone made the scan
// the longest part of a carry there).
func (f *FS) chunkAll(ctx context.Context, s *Scan, base string, walk func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan hashJob, 64)
	type hashed struct {
		i      int
		chunks []Chunk
	}
	var mu sync.Mutex
	var done []hashed
	var wg sync.WaitGroup
	for range max(runtime.GOMAXPROCS(0)-1, 2) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				if ctx.Err() != nil {
					continue
				}
				chunks, err := f.chunkFile(j.c, j.fi)
				if err != nil {
					cancel(err)
					continue
				}
				mu.Lock()
				done = append(done, hashed{i: j.i, chunks: chunks})
				mu.Unlock()
			}
		}()
	}
	s.hash = work
	err := walk(ctx)
	s.hash = nil
	if err != nil {
		cancel(err) // the workers skip what is still queued
	}
	close(work)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	for _, h := range done {
		s.Entries[h.i].Chunks = h.chunks // the walk set its size, time and mode from the same stat
	}
	for _, e := range s.Entries {
		if e.Type != TypeFile {
			continue
		}
		s.Files++
		s.Bytes += e.Size
		var off int64
		for _, ch := range e.Chunks {
			if _, ok := s.loc[ch.Sum]; !ok {
				s.loc[ch.Sum] = chunkLoc{path: join(base, e.Path), off: off, size: ch.Size}
			}
			off += int64(ch.Size)
		}
	}
	return nil
}

// ReadChunks appends the content of chunks sums to dst[:0], one after the
// other, at most limit bytes (ErrTooManyEntries past it); dst with the
// room is filled in place. A run of chunks of one file is read with one
// open. They are not hashed again here: the receiver checks each against
// its name (a file changed since the scan).
func (s *Scan) ReadChunks(dst []byte, sums []Sum, limit int) ([]byte, error) {
	total, err := s.ChunkBytes(sums)
	if err != nil {
		return nil, err
	}
	if total > int64(limit) {
		return nil, errorf(ErrTooManyEntries, "snapshot: %d bytes of chunks asked for, at most %d", total, limit)
	}
	out := slices.Grow(dst[:0], int(total))
	err = s.SendChunks(sums, func(path string, f *os.File, off, n int64) error {
		m := len(out)
		out = out[:m+int(n)]
		if _, err := f.ReadAt(out[m:], off); err != nil {
			if errors.Is(err, io.EOF) {
				return err // the file shrank: ErrSourceChanged
			}
			return mapErr("snapshot", path, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SendChunks hands the content of chunks sums, in order, to send: as n
// bytes at off of an open file of the scan (a run of chunks of one file
// shares one open), with the file's path in the root, which errors name
// (f's name has the root's own directories in it); chunks that follow
// each other in one file are handed as one run (a first snapshot asks for whole files: one read or sendfile per
// run, not per chunk), which send must copy out before it returns. The
// bytes are not hashed here, as with ReadChunks. send returns an error
// wrapping io.ErrUnexpectedEOF (or io.EOF) when the file is shorter than
// off+n: that is ErrSourceChanged.
func (s *Scan) SendChunks(sums []Sum, send func(path string, f *os.File, off, n int64) error) error {
	if _, err := s.ChunkBytes(sums); err != nil {
		return err // a chunk not in the scan: nothing is sent
	}
	var file *os.File
	var open string
	defer func() {
		if file != nil {
			file.Close()
		}
	}()
	// [off, off+n) of open is the run not handed to send yet.
	var off, n int64
	flush := func() error {
		if n == 0 {
			return nil
		}
		err := send(open, file, off, n)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return errorf(ErrSourceChanged, "snapshot %s: the file shrank since the scan", open)
		}
		n = 0
		return err
	}
	for _, sum := range sums {
		loc := s.loc[sum]
		if file != nil && open == loc.path && loc.off == off+n {
			n += int64(loc.size)
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if file == nil || open != loc.path {
			if file != nil {
				file.Close()
			}
			f, err := s.fs.openRead(loc.path)
			if err != nil {
				file = nil
				return errorf(ErrSourceChanged, "snapshot %s: %v", loc.path, err)
			}
			file, open = f, loc.path
		}
		off, n = loc.off, int64(loc.size)
	}
	return flush()
}

// ChunkBytes is the content size of chunks sums of the scan.
func (s *Scan) ChunkBytes(sums []Sum) (int64, error) {
	var total int64
	for _, sum := range sums {
		loc, ok := s.loc[sum]
		if !ok {
			return 0, errorf(iofs.ErrNotExist, "snapshot: no chunk %x in this scan", sum[:8])
		}
		total += int64(loc.size)
	}
	return total, nil
}

// AppendChunk appends the content of chunk sum to dst. The bytes are
// checked against sum: a file changed since the scan is ErrSourceChanged.
func (s *Scan) AppendChunk(dst []byte, sum Sum) ([]byte, error) {
	loc, ok := s.loc[sum]
	if !ok {
		return dst, errorf(iofs.ErrNotExist, "snapshot: no chunk %x in this scan", sum[:8])
	}
	return s.fs.appendChunk(dst, loc, sum)
}

// appendChunk reads loc onto dst and checks it against sum.
func (f *FS) appendChunk(dst []byte, loc chunkLoc, sum Sum) ([]byte, error) {
	file, err := f.openRead(loc.path)
	if err != nil {
		return dst, errorf(ErrSourceChanged, "snapshot %s: %v", loc.path, err)
	}
	defer file.Close()
	n := len(dst)
	dst = slices.Grow(dst, int(loc.size))[:n+int(loc.size)]
	if _, err := file.ReadAt(dst[n:], loc.off); err != nil {
		if errors.Is(err, io.EOF) {
			return dst[:n], errorf(ErrSourceChanged, "snapshot %s: the file shrank since the scan", loc.path)
		}
		return dst[:n], mapErr("snapshot", loc.path, err)
	}
	if sha256.Sum256(dst[n:]) != sum {
		return dst[:n], errorf(ErrSourceChanged, "snapshot %s: the file changed since the scan", loc.path)
	}
	return dst, nil
}

// checkSnapEntry validates one manifest entry as a restore reads it.
func checkSnapEntry(e *SnapEntry) (string, error) {
	c, err := CheckEntryName(e.Path)
	if err != nil {
		return "", err
	}
	if c == "." || c != e.Path {
		return "", errorf(ErrUnsafeEntry, "snapshot entry %q is not a clean relative path", e.Path)
	}
	if e.Mode&^uint32(os.ModePerm) != 0 {
		return "", errorf(iofs.ErrInvalid, "snapshot entry %s: mode %o has bits beyond 0777", c, e.Mode)
	}
	switch e.Type {
	case TypeDir:
	case TypeSymlink:
		if err := CheckLinkTarget(c, e.Link); err != nil {
			return "", err
		}
	case TypeFile:
		var sum int64
		for _, ch := range e.Chunks {
			if ch.Size == 0 || ch.Size > cdc.DefaultMax {
				return "", errorf(iofs.ErrInvalid, "snapshot entry %s: a chunk of %d bytes", c, ch.Size)
			}
			sum += int64(ch.Size)
		}
		if sum != e.Size {
			return "", errorf(iofs.ErrInvalid, "snapshot entry %s: chunks of %d bytes for a size of %d", c, sum, e.Size)
		}
	default:
		return "", errorf(ErrUnsupportedEntry, "snapshot entry %s: type %q", c, e.Type)
	}
	return c, nil
}

// checkManifest validates a whole manifest before anything is written:
// clean unique paths, every parent a directory of the manifest (so that
// nothing lies under a symlink it makes), safe link targets.
func checkManifest(entries []SnapEntry) error {
	types := make(map[string]string, len(entries))
	for i := range entries {
		c, err := checkSnapEntry(&entries[i])
		if err != nil {
			return err
		}
		if _, dup := types[strings.ToLower(c)]; dup {
			return errorf(ErrUnsafeEntry, "snapshot entry %s appears twice", c)
		}
		types[strings.ToLower(c)] = entries[i].Type
	}
	for _, e := range entries {
		for d := path.Dir(e.Path); d != "."; d = path.Dir(d) {
			if t := types[strings.ToLower(d)]; t != TypeDir {
				what := "is missing from the manifest"
				if t == TypeSymlink {
					what = "is a symlink"
				} else if t != "" {
					what = "is a " + t
				}
				return errorf(ErrUnsafeEntry, "snapshot entry %s: its parent %s %s", e.Path, d, what)
			}
		}
	}
	return nil
}

// String describes a chunk for messages.
func (c Chunk) String() string { return fmt.Sprintf("%x(%d)", c.Sum[:6], c.Size) }
