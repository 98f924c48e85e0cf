package files

import (
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Open opens regular file p for reading at any offset, following symbolic
// links only while they stay inside the root. The open file keeps its
// content even when a write replaces p (writes rename a new file into
// place), so reads through it see one version. The caller closes it.
func (f *FS) Open(p string) (*os.File, Entry, error) {
	c, err := Clean(p)
	if err != nil {
		return nil, Entry{}, err
	}
	if isTemp(c) {
		return nil, Entry{}, tempNotFound("read", c)
	}
	file, err := f.root.OpenFile(native(c), readFlags, 0)
	if err != nil {
		return nil, Entry{}, mapErr("read", c, err)
	}
	e, err := openedEntry(file, c, 0)
	if err != nil {
		file.Close()
		return nil, Entry{}, err
	}
	return file, e, nil
}

// HostDir returns the host path of directory p under the root, with
// symbolic links evaluated, for programs that must run in it (git). A path
// that leaves the root, lexically or through a link, is
// ErrOutsideRoot; a missing one ErrNotExist; a file ErrInvalid. The answer is only as good as the moment it was
// computed: a link swapped in afterwards is not seen.
func (f *FS) HostDir(p string) (string, error) {
	c, err := Clean(p)
	if err != nil {
		return "", err
	}
	d, err := f.root.Open(native(c)) // confined: proves the path stays inside now
	if err != nil {
		return "", mapErr("open directory", c, err)
	}
	fi, err := d.Stat()
	d.Close()
	if err != nil {
		return "", mapErr("open directory", c, err)
	}
	if !fi.IsDir() {
		return "", errorf(iofs.ErrInvalid, "%s is not a directory", c)
	}
	root, err := f.RealRoot()
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, native(c)))
	if err != nil {
		return "", mapErr("open directory", c, err)
	}
	if !within(root, real) {
		return "", outside(p)
	}
	return real, nil
}

// RealRoot is the root's host path with symbolic links evaluated.
func (f *FS) RealRoot() (string, error) {
	abs, err := filepath.Abs(f.root.Name())
	if err != nil {
		return "", mapErr("open root", ".", err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", mapErr("open root", ".", err)
	}
	return root, nil
}

// within reports whether clean absolute path p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil || filepath.IsAbs(rel) {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
