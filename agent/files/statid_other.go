//go:build !unix

package files

import iofs "io/fs"

// inode is 0 where the platform gives none: size and time decide alone.
func inode(iofs.FileInfo) uint64 { return 0 }
