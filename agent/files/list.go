package files

import (
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// Stat describes p. A final symbolic link is described, not followed; a link
// in the middle of p is followed only while it stays inside the root.
func (f *FS) Stat(p string) (Entry, error) {
	c, err := Clean(p)
	if err != nil {
		return Entry{}, err
	}
	if isTemp(c) {
		return Entry{}, tempNotFound("stat", c)
	}
	return f.lstatEntry("stat", c)
}

// List describes the entries of directory p, sorted by path. With recursive it
// descends into subdirectories but never through symbolic links. Temporary
// files of writes in progress (TempPrefix) are left out. A limit > 0
// bounds the number of entries: a listing that would exceed it fails with
// ErrTooManyEntries rather than being cut short silently. If p is not a
// directory, List returns its own Entry.
func (f *FS) List(p string, recursive bool, limit int) ([]Entry, error) {
	c, err := Clean(p)
	if err != nil {
		return nil, err
	}
	if isTemp(c) {
		return nil, tempNotFound("list", c)
	}
	top, err := f.lstatEntry("list", c)
	if err != nil {
		return nil, err
	}
	if top.Type != TypeDir {
		return []Entry{top}, nil
	}
	w := walker{fs: f, recursive: recursive, limit: limit}
	if err := w.walk(c); err != nil {
		return nil, err
	}
	sort.Slice(w.out, func(i, j int) bool { return w.out[i].Path < w.out[j].Path })
	return w.out, nil
}

// walker collects a listing.
type walker struct {
	fs        *FS
	recursive bool
	limit     int
	out       []Entry
}

// readBatch is how many directory entries are read at a time.
const readBatch = 256

// walk appends the entries of directory c and, when recursive, of its
// subdirectories.
func (w *walker) walk(c string) error {
	d, err := w.fs.root.Open(native(c))
	if err != nil {
		return mapErr("list", c, err)
	}
	defer d.Close()
	var dirs []string
	for {
		names, err := d.Readdirnames(readBatch)
		for _, name := range names {
			if strings.HasPrefix(name, TempPrefix) || w.fs.hidden(join(c, name)) {
				continue // a write in progress, or a denied path
			}
			isDir, err := w.add(join(c, name))
			if err != nil {
				return err
			}
			if isDir {
				dirs = append(dirs, join(c, name))
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return mapErr("list", c, err)
		}
	}
	if !w.recursive {
		return nil
	}
	for _, sub := range dirs {
		if err := w.walk(sub); err != nil {
			return err
		}
	}
	return nil
}

// add records the entry at c and reports whether it is a directory to descend
// into. An entry that vanished since the directory was read is skipped.
func (w *walker) add(c string) (bool, error) {
	e, err := w.fs.lstatEntry("list", c)
	if errors.Is(err, iofs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if w.limit > 0 && len(w.out) >= w.limit {
		return false, errorf(ErrTooManyEntries, "list: more than %d entries", w.limit)
	}
	w.out = append(w.out, e)
	return e.Type == TypeDir, nil
}

// join joins a clean directory path and a name.
func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return path.Join(dir, name)
}

// rootDirent is an entry of a directory open as root, its type from the
// listing: Info is lstat in root (never a path from the working
// directory, as a plain File's entries would do).
type rootDirent struct {
	root *os.Root
	name string
	typ  iofs.FileMode
}

func (e rootDirent) Name() string                 { return e.name }
func (e rootDirent) IsDir() bool                  { return e.typ.IsDir() }
func (e rootDirent) Type() iofs.FileMode          { return e.typ }
func (e rootDirent) Info() (iofs.FileInfo, error) { return e.root.Lstat(e.name) }
