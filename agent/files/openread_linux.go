//go:build linux

package files

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// beneathDir is the root directory, open, to open files under it with
// one openat2 confined beneath it (see openRead).
type beneathDir struct {
	once sync.Once
	dir  *os.File    // nil: could not be opened
	off  atomic.Bool // openat2 is not there (old kernel, seccomp)
}

// openRead opens root-relative file c for reading, as
// f.root.OpenFile(c, readFlags) does. On Linux it is first tried with one
// openat2 from the root's directory, resolved beneath it (the kernel
// refuses any component outside it) and through no symlink at all: an
// os.Root opens every directory of the path on the way, and closes it,
// which for a snapshot's files (a scan, then the chunks sent) was two
// openat and two close per file in a tree two levels deep. A path that
// openat2 refuses (a symlink on the way, a missing file, anything) goes
// to os.Root, whose answer stands: the rules are its rules.
func (f *FS) openRead(c string) (*os.File, error) {
	if file := f.beneath.open(f, c); file != nil {
		return file, nil
	}
	return f.root.OpenFile(native(c), readFlags, 0)
}

// open is openRead's openat2, or nil.
func (b *beneathDir) open(f *FS, c string) *os.File {
	b.once.Do(func() {
		if d, err := f.root.Open("."); err == nil {
			b.dir = d
		}
	})
	if b.dir == nil || b.off.Load() {
		return nil
	}
	rc, err := b.dir.SyscallConn()
	if err != nil {
		return nil
	}
	how := unix.OpenHow{
		Flags:   uint64(readFlags | unix.O_CLOEXEC | unix.O_NOFOLLOW),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, oerr := -1, error(nil)
	if err := rc.Control(func(dfd uintptr) { fd, oerr = unix.Openat2(int(dfd), c, &how) }); err != nil {
		return nil
	}
	if oerr != nil {
		if errors.Is(oerr, unix.ENOSYS) || errors.Is(oerr, unix.EPERM) || errors.Is(oerr, unix.EINVAL) || errors.Is(oerr, unix.E2BIG) {
			b.off.Store(true) // not there, or not allowed: os.Root from now on
		}
		return nil
	}
	name := f.root.Name()
	if len(name) == 0 || !os.IsPathSeparator(name[len(name)-1]) {
		name += "/"
	}
	return os.NewFile(uintptr(fd), name+c)
}

// close closes the root's directory (the FS is closing).
func (b *beneathDir) close() {
	b.once.Do(func() {})
	if b.dir != nil {
		b.dir.Close()
	}
}
