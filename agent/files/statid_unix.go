//go:build unix

package files

import (
	iofs "io/fs"
	"syscall"
)

// inode is fi's inode number, part of what tells the chunk cache that a
// file is unchanged.
func inode(fi iofs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
