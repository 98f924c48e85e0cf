//go:build unix

package files

import (
	iofs "io/fs"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// readDir lists directory r, sorted by name, with each entry's type from
// the listing itself where the file system gives it. os.Root's ReadDir
// calls lstat for every entry (a second call per file for search and
// archive walks); a plain File of the same directory, a duplicate of its
// descriptor, does not. The entries only answer Name, IsDir and Type:
// Info is lstat in r.
func readDir(r *os.Root) ([]iofs.DirEntry, error) {
	d, err := r.Open(".")
	if err != nil {
		return nil, err
	}
	fd, err := unix.Dup(int(d.Fd()))
	d.Close()
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	es, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]iofs.DirEntry, len(es))
	for i, e := range es {
		out[i] = rootDirent{root: r, name: e.Name(), typ: e.Type()}
	}
	slices.SortFunc(out, func(a, b iofs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// sameDir reports whether directory st, open, is want, its parent's
// listing's lstat of it (device and inode).
func sameDir(want, st iofs.FileInfo) bool { return st.IsDir() && os.SameFile(want, st) }
