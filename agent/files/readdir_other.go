//go:build !unix

package files

import (
	iofs "io/fs"
	"os"
)

// readDir lists directory r, sorted by name.
func readDir(r *os.Root) ([]iofs.DirEntry, error) {
	d, err := r.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}
