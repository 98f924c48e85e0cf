//go:build !unix

package files

import (
	iofs "io/fs"
	"os"
	"slices"
	"strings"
)

// readDir lists directory r, sorted by name.
func readDir(r *os.Root) ([]iofs.DirEntry, error) {
	d, err := r.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	es, err := d.ReadDir(-1)
	slices.SortFunc(es, func(a, b iofs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return es, err
}

// sameDir reports whether directory st, open, is want, its parent's
// listing's lstat of it: only that it is a directory here (a listing's
// FileInfo carries no file id on these systems without another lookup).
func sameDir(want, st iofs.FileInfo) bool { return st.IsDir() && want.IsDir() }
