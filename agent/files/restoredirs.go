package files

import (
	"errors"
	iofs "io/fs"
	"os"
	"path"
	"sync"
)

// maxIdleDirs bounds the directories a restore keeps open while no file
// of theirs is being written: enough for every directory of a tree of
// tens of thousands of files, few enough for any limit on open files.
const maxIdleDirs = 256

// restoreDirs are the directories a restore writes files in, each opened
// once (an os.Root) and kept while the restore lasts, so that a file's
// temporary file is created, timed and renamed by its name in there
// rather than by a walk of its whole path from the root (os.Root opens
// every component of a path on each call: the walks were most of a
// restore's CPU outside the writes themselves).
//
// The restore's directory (base) is opened as any path a call names is,
// following symlinks that stay inside the root. Each directory below it
// is opened from its parent's by name, after an Lstat there shows a
// directory (a missing one is made, once): a directory of the manifest
// replaced by a symlink or a file since BeginRestore is refused
// (ErrUnsafeEntry), never followed, wherever the link points. What is
// opened stays inside the root as any os.Root does; since an os.Root
// follows its directory wherever it is moved, even out of the root, a
// directory kept open is checked (check) before a file is made, renamed
// or removed by name in it, and one moved away is refused too.
type restoreDirs struct {
	fs   *FS
	base string // clean root-relative; every directory asked for is it or below it
	mu   sync.Mutex
	open map[string]*restoreDir // by clean root-relative path
	idle int                    // entries with no file being written
}

// restoreDir is one open directory and how many files being written in
// it hold it (one that none holds may be closed to bound the open files).
type restoreDir struct {
	root *os.Root
	id   iofs.FileInfo // root's directory, as opened (nil for the FS's own)
	refs int
}

// acquire returns directory c (clean, root-relative), open, held until
// release.
func (ds *restoreDirs) acquire(c string) (*restoreDir, error) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	d, err := ds.get(c)
	if err != nil {
		return nil, err
	}
	if err := ds.check(c, d); err != nil {
		return nil, err
	}
	if d.refs == 0 {
		ds.idle--
	}
	d.refs++
	ds.trim()
	return d, nil
}

// verify checks that directory d, held, is still c: see check.
func (ds *restoreDirs) verify(c string, d *restoreDir) error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return ds.check(c, d)
}

// check, with ds.mu held, refuses (ErrUnsafeEntry) directory d unless it
// is still what c names: each directory from it up to base is the one
// its parent holds by that name (an Lstat, so never a symlink), and base
// the one the root holds at base's path. An os.Root keeps referring to
// its directory wherever it is moved, even out of the agent's root, so
// a directory kept open is checked before a file is made or renamed in
// it; the window left is that of a single call, as when every call
// walked the path from the root.
func (ds *restoreDirs) check(c string, d *restoreDir) error {
	for c != "." {
		var fi iofs.FileInfo
		var err error
		var parent *restoreDir
		if c == ds.base {
			fi, err = ds.fs.root.Stat(native(c))
		} else {
			if parent, err = ds.get(path.Dir(c)); err != nil {
				return err
			}
			fi, err = parent.root.Lstat(path.Base(c))
		}
		if err != nil || !os.SameFile(fi, d.id) {
			return errorf(ErrUnsafeEntry, "restore %s: moved or replaced while the restore ran", c)
		}
		if c == ds.base {
			return nil
		}
		c, d = path.Dir(c), parent
	}
	return nil
}

// release gives back a directory acquire returned.
func (ds *restoreDirs) release(d *restoreDir) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if d.refs--; d.refs == 0 {
		ds.idle++
	}
	ds.trim()
}

// get returns directory c, opening it (and its parents) if needed, with
// ds.mu held. A new entry is idle.
func (ds *restoreDirs) get(c string) (*restoreDir, error) {
	if d, ok := ds.open[c]; ok {
		return d, nil
	}
	switch {
	case c == ".":
		d := &restoreDir{root: ds.fs.root} // the FS's own: never closed here
		ds.add(c, d)
		return d, nil
	case c == ds.base:
		r, err := ds.fs.root.OpenRoot(native(c))
		if err != nil {
			return nil, mapErr("restore", c, err)
		}
		id, err := r.Stat(".")
		if err != nil {
			r.Close()
			return nil, mapErr("restore", c, err)
		}
		d := &restoreDir{root: r, id: id}
		ds.add(c, d)
		return d, nil
	}
	parent, err := ds.get(path.Dir(c))
	if err != nil {
		return nil, err
	}
	name := path.Base(c)
	fi, err := parent.root.Lstat(name)
	if errors.Is(err, iofs.ErrNotExist) {
		// Gone since BeginRestore made it: made again, as MkdirParents
		// would.
		if err := parent.root.Mkdir(name, dirMode); err != nil && !errors.Is(err, iofs.ErrExist) {
			return nil, mapErr("restore", c, err)
		}
		fi, err = parent.root.Lstat(name)
	}
	if err != nil {
		return nil, mapErr("restore", c, err)
	}
	if !fi.IsDir() {
		return nil, errorf(ErrUnsafeEntry, "restore %s: no longer a directory (%v)", c, fi.Mode().Type())
	}
	r, err := parent.root.OpenRoot(name)
	if err != nil {
		return nil, mapErr("restore", c, err)
	}
	// What was opened is what the Lstat saw: not a symlink swapped in
	// between (OpenRoot follows one that stays inside the parent).
	id, err := r.Stat(".")
	if err != nil || !os.SameFile(id, fi) {
		r.Close()
		return nil, errorf(ErrUnsafeEntry, "restore %s: replaced while the restore ran", c)
	}
	d := &restoreDir{root: r, id: id}
	ds.add(c, d)
	return d, nil
}

// add records idle entry d for c.
func (ds *restoreDirs) add(c string, d *restoreDir) {
	if ds.open == nil {
		ds.open = map[string]*restoreDir{}
	}
	ds.open[c] = d
	ds.idle++
}

// trim closes idle directories while there are more than maxIdleDirs.
func (ds *restoreDirs) trim() {
	for c, d := range ds.open {
		if ds.idle <= maxIdleDirs {
			return
		}
		if d.refs == 0 {
			ds.closeDir(d)
			delete(ds.open, c)
			ds.idle--
		}
	}
}

func (ds *restoreDirs) closeDir(d *restoreDir) {
	if d.root != ds.fs.root {
		d.root.Close()
	}
}

// closeAll closes every directory; the restore is over.
func (ds *restoreDirs) closeAll() {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	for _, d := range ds.open {
		ds.closeDir(d)
	}
	ds.open, ds.idle = nil, 0
}
