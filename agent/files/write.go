package files

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"time"
)

// TempPrefix starts the name of every temporary file a write creates next to
// its target. Such files exist only while a write is in progress (and, after
// a crash, until the journal's sweep at the next start; see OpenJournal).
// The names are the agent's own: List leaves them out, Stat, Read, Open,
// Move and Remove find nothing there, and Write, Mkdir and Move refuse to
// make one (ErrInvalid).
const TempPrefix = ".outpost-tmp-"

// DefaultFileMode is the mode of a new file when WriteOptions.Mode is zero.
const DefaultFileMode os.FileMode = 0o644

// dirMode is the mode of directories made by MkdirParents and Mkdir.
const dirMode os.FileMode = 0o755

// WriteOptions control Write and BeginWrite.
type WriteOptions struct {
	// Mode holds the permission bits of the written file. Zero keeps an
	// existing file's mode, or uses DefaultFileMode for a new file.
	Mode os.FileMode
	// Overwrite allows replacing an existing file; without it an existing
	// path is ErrExist.
	Overwrite bool
	// MkdirParents creates missing parent directories.
	MkdirParents bool
	// NoSync skips the file's and its directory's fsync at commit, for a
	// caller that syncs many files at once afterwards (an archive unpack:
	// see syncAll). The write is atomic all the same.
	NoSync bool
	// ModTime, when set, is the written file's modification time (a
	// snapshot restore keeps the times it recorded, as rsync -a does).
	ModTime time.Time
	// NoHash skips the content's SHA-256 (WriteResult.SHA256 is then
	// empty): a restore checked every chunk already.
	NoHash bool
}

// WriteResult describes a committed write.
type WriteResult struct {
	// Path is the clean root-relative path written.
	Path string
	// Size is the length of the file in bytes.
	Size int64
	// SHA256 is the lowercase hex SHA-256 of the content.
	SHA256 string
}

// Write atomically replaces or creates file p with the content of r. The
// content goes to a temporary file in the same directory, is synced, and is
// renamed into place; readers see the old file or the new one, never a part.
// If r fails, or anything else does, the temporary file is removed and the old
// file is left as it was. A final symbolic link at p is replaced, not
// followed.
func (f *FS) Write(p string, r io.Reader, opts WriteOptions) (WriteResult, error) {
	u, err := f.BeginWrite(p, opts)
	if err != nil {
		return WriteResult{}, err
	}
	if err := u.copyFrom(r); err != nil {
		u.Abort()
		return WriteResult{}, err
	}
	return u.Commit()
}

// copyBuf is the size of the buffer Write copies through.
const copyBuf = 64 << 10

// copyFrom appends all of r to the upload.
func (u *Upload) copyFrom(r io.Reader) error {
	buf := make([]byte, copyBuf)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if _, err := u.Write(buf[:n]); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("write %s: reading content: %w", u.path, rerr)
		}
	}
}

// checkTargetAt refuses writing to c, which is name in r, when it is a
// directory, or exists and overwrite is false.
func checkTargetAt(r *os.Root, name, c string, overwrite bool) error {
	fi, err := r.Lstat(name)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return nil
	case err != nil:
		return mapErr("write", c, err)
	case fi.IsDir():
		return errorf(iofs.ErrInvalid, "write %s: is a directory", c)
	case !overwrite:
		return errorf(iofs.ErrExist, "write %s: already exists", c)
	}
	return nil
}

// modeFor picks the mode of the file written to c: the requested one, else
// the existing file's, else DefaultFileMode.
func (f *FS) modeFor(c string, requested os.FileMode) os.FileMode {
	if requested != 0 {
		return requested
	}
	fi, err := f.root.Stat(native(c))
	if err != nil || !fi.Mode().IsRegular() {
		return DefaultFileMode
	}
	return fi.Mode().Perm()
}
