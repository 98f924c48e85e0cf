package files

import (
	"errors"
	"io"
	iofs "io/fs"
	"strings"
)

// Mkdir creates directory p. Without parents, p's parent must exist and p must
// not; with parents, missing parents are created and an existing directory is
// not an error (mkdir -p). Anything else already at p is
// ErrExist.
func (f *FS) Mkdir(p string, parents bool) error {
	c, err := Clean(p)
	if err != nil {
		return err
	}
	if isTemp(c) {
		return tempReserved("mkdir", c)
	}
	if parents {
		err = f.root.MkdirAll(native(c), dirMode)
	} else {
		err = f.root.Mkdir(native(c), dirMode)
	}
	if err == nil {
		return nil
	}
	if e, serr := f.lstatEntry("mkdir", c); serr == nil && e.Type != TypeDir {
		return errorf(iofs.ErrExist, "mkdir %s: a %s exists", c, e.Type)
	}
	return mapErr("mkdir", c, err)
}

// Move renames from to to. A symbolic link is moved itself. An existing
// target without overwrite is ErrExist; with overwrite a
// non-directory replaces a non-directory, but a directory is never replaced
// (ErrExist). The target's parent must exist.
func (f *FS) Move(from, to string, overwrite bool) error {
	src, err := Clean(from)
	if err != nil {
		return err
	}
	dst, err := Clean(to)
	if err != nil {
		return err
	}
	if src == "." || dst == "." {
		return errorf(iofs.ErrInvalid, "move %s to %s: cannot move the root", src, dst)
	}
	if isTemp(src) {
		return tempNotFound("move", src)
	}
	if isTemp(dst) {
		return tempReserved("move", dst)
	}
	srcE, err := f.lstatEntry("move", src)
	if err != nil {
		return err
	}
	if src == dst {
		return nil
	}
	if strings.HasPrefix(dst, src+"/") {
		return errorf(iofs.ErrInvalid, "move %s to %s: target inside source", src, dst)
	}
	if err := f.checkMoveTarget(dst, srcE.Type == TypeDir, overwrite); err != nil {
		return err
	}
	if err := f.root.Rename(native(src), native(dst)); err != nil {
		return mapErr("move", src+" to "+dst, err)
	}
	return nil
}

// checkMoveTarget refuses an existing dst without overwrite, and replacing a
// directory, or replacing anything with a directory.
func (f *FS) checkMoveTarget(dst string, srcIsDir, overwrite bool) error {
	e, err := f.lstatEntry("move", dst)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !overwrite:
		return errorf(iofs.ErrExist, "move to %s: already exists", dst)
	case srcIsDir || e.Type == TypeDir:
		return errorf(iofs.ErrExist, "move to %s: cannot replace a %s", dst, e.Type)
	}
	return nil
}

// Remove deletes p. A non-empty directory needs recursive, else it is
// ErrNotEmpty. A symbolic link is removed itself, never its target.
// The root cannot be removed.
func (f *FS) Remove(p string, recursive bool) error {
	c, err := Clean(p)
	if err != nil {
		return err
	}
	if c == "." {
		return errorf(iofs.ErrInvalid, "remove: cannot remove the root")
	}
	if isTemp(c) {
		return tempNotFound("remove", c)
	}
	e, err := f.lstatEntry("remove", c)
	if err != nil {
		return err
	}
	if recursive && e.Type == TypeDir {
		return mapErr("remove", c, f.root.RemoveAll(native(c)))
	}
	err = f.root.Remove(native(c))
	if err != nil && e.Type == TypeDir && f.nonEmpty(c) {
		return errorf(ErrNotEmpty, "remove %s: directory not empty", c)
	}
	return mapErr("remove", c, err)
}

// nonEmpty reports whether directory c has at least one entry.
func (f *FS) nonEmpty(c string) bool {
	d, err := f.root.Open(native(c))
	if err != nil {
		return false
	}
	defer d.Close()
	_, err = d.Readdirnames(1)
	return !errors.Is(err, io.EOF)
}
