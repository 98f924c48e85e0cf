// Package files performs file operations confined to one directory, the agent's
// root, using os.Root.
//
// Paths are slash-separated and relative to the root; "", "." and "/" name the
// root itself and a leading "/" is stripped (API.md: "a leading / means the
// root"). A path that leaves the root lexically (".."), through a symbolic link,
// by naming a volume or device, or that holds a NUL byte fails with
// ErrOutsideRoot, and nothing outside the root is read or written. Errors are
// domain errors, classified with errors.Is (see ErrOutsideRoot): this package
// knows nothing of the wire; the agent maps its errors at its dispatch.
package files

import (
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxPathLen bounds the length of a path argument; longer ones are
// ErrInvalid before any file system call is made.
const MaxPathLen = 4096

// Entry types, as in the API's "type" field.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// FS is a directory tree confined to a root. It is safe for concurrent use.
type FS struct {
	root *os.Root

	mu      sync.Mutex
	closed  bool
	journal *journal    // nil until OpenJournal
	chunks  *chunkCache // nil until the first snapshot or restore
	// beneath opens a snapshot's files in one call where it can (see
	// openRead).
	beneath beneathDir

	hide   atomic.Pointer[func(c string) bool]  // SetHidden
	wcheck atomic.Pointer[func(c string) error] // SetWriteCheck
}

// SetHidden makes walks (List, Search, Find, Watch, WriteArchive) leave out
// every clean path for which fn reports true, and ExtractArchive refuse
// entries there with ErrDenied: the paths the machine owner's policy
// denies. The agent checks the paths a call names before calling; this
// covers what a walk meets below them. fn is called concurrently; nil
// hides nothing.
func (f *FS) SetHidden(fn func(c string) bool) {
	if fn == nil {
		f.hide.Store(nil)
		return
	}
	f.hide.Store(&fn)
}

// SetWriteCheck makes ExtractArchive and snapshot restores ask fn about
// every clean path they would write (the paths the agent checks itself
// are the ones a call names; these are the ones inside an archive or a
// manifest) and refuse the whole operation with fn's error, wrapped, when
// it returns one. fn is called concurrently; nil checks nothing.
func (f *FS) SetWriteCheck(fn func(c string) error) {
	if fn == nil {
		f.wcheck.Store(nil)
		return
	}
	f.wcheck.Store(&fn)
}

// writeCheck is SetWriteCheck's verdict on clean path c.
func (f *FS) writeCheck(c string) error {
	if fn := f.wcheck.Load(); fn != nil {
		return (*fn)(c)
	}
	return nil
}

// hidden reports whether clean path c is hidden by SetHidden's function.
func (f *FS) hidden(c string) bool {
	fn := f.hide.Load()
	return fn != nil && (*fn)(c)
}

// Entry describes one file, directory or link.
type Entry struct {
	// Name is the last element of Path ("." for the root).
	Name string
	// Path is slash-separated and relative to the root ("." for the root).
	Path string
	// Type is TypeFile, TypeDir, TypeSymlink or TypeOther.
	Type string
	// Size is the length in bytes for files and what the OS reports otherwise.
	Size int64
	// Mode holds the permission bits (0o777).
	Mode uint32
	// ModTime is the last modification time.
	ModTime time.Time
	// LinkTarget is a symlink's target as stored, possibly pointing outside
	// the root; empty for other types.
	LinkTarget string
}

// New opens root, which must be an existing directory.
func New(root string) (*FS, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, mapErr("open root", root, err)
	}
	learnEscapeErr(r)
	return &FS{root: r}, nil
}

// Close releases the root. It is idempotent; later operations fail.
func (f *FS) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	if f.journal != nil {
		f.journal.close()
	}
	f.beneath.close()
	return f.root.Close()
}

// Root is the directory the FS is confined to, as given to New.
func (f *FS) Root() string { return f.root.Name() }

// Clean validates p and returns it as a clean slash path relative to the root
// ("." for the root). It reports ErrOutsideRoot for paths that leave the root
// lexically and ErrInvalid for over-long paths; symbolic links are
// checked only when the path is used.
func Clean(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", errorf(ErrOutsideRoot, "path %q holds a NUL byte", p)
	}
	if len(p) > MaxPathLen {
		return "", errorf(iofs.ErrInvalid, "path longer than %d bytes", MaxPathLen)
	}
	if runtime.GOOS == "windows" {
		if filepath.VolumeName(p) != "" {
			return "", outside(p)
		}
		p = filepath.ToSlash(p)
	}
	c := path.Clean(strings.TrimLeft(p, "/"))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", outside(p)
	}
	if c != "." && !filepath.IsLocal(filepath.FromSlash(c)) {
		// Only Windows reaches here: reserved device names such as NUL.
		return "", outside(p)
	}
	return c, nil
}

// isTemp reports whether clean path c is, or lies under, a name starting
// with TempPrefix. Those are the agent's temporary files: no operation shows
// them, reads them or makes them (see TempPrefix).
func isTemp(c string) bool {
	return strings.HasPrefix(c, TempPrefix) || strings.Contains(c, "/"+TempPrefix)
}

// tempNotFound is what an operation reading a temporary file's name gets:
// to it, the file does not exist.
func tempNotFound(op, c string) error {
	return errorf(iofs.ErrNotExist, "%s %s: no such file or directory", op, c)
}

// tempReserved is what an operation making a temporary file's name gets.
func tempReserved(op, c string) error {
	return errorf(iofs.ErrInvalid, "%s %s: names starting with %s are reserved for the agent's temporary files", op, c, TempPrefix)
}

func outside(p string) error {
	return errorf(ErrOutsideRoot, "path %q is outside the root", p)
}

// native turns a clean slash path into the name os.Root expects.
func native(c string) string { return filepath.FromSlash(c) }

// entryOf builds the Entry for clean path c from fi; link is the symlink target.
func entryOf(c string, fi iofs.FileInfo, link string) Entry {
	e := Entry{
		Name:    path.Base(c),
		Path:    c,
		Size:    fi.Size(),
		Mode:    uint32(fi.Mode().Perm()),
		ModTime: fi.ModTime(),
	}
	switch m := fi.Mode(); {
	case m.IsRegular():
		e.Type = TypeFile
	case m.IsDir():
		e.Type = TypeDir
	case m&iofs.ModeSymlink != 0:
		e.Type = TypeSymlink
		e.LinkTarget = link
	default:
		e.Type = TypeOther
	}
	return e
}

// lstatEntry describes c without following a final symlink.
func (f *FS) lstatEntry(op, c string) (Entry, error) {
	fi, err := f.root.Lstat(native(c))
	if err != nil {
		return Entry{}, mapErr(op, c, err)
	}
	var link string
	if fi.Mode()&iofs.ModeSymlink != 0 {
		link, err = f.root.Readlink(native(c))
		if err != nil {
			return Entry{}, mapErr(op, c, err)
		}
		link = filepath.ToSlash(link)
	}
	return entryOf(c, fi, link), nil
}
