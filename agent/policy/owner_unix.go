//go:build unix

package policy

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a file group or others may write, or whose owner is
// neither the agent's user nor root.
func checkOwner(path string, st fs.FileInfo) error {
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s has mode %#o (chmod go-w %s)", ErrUnsafeFile, path, st.Mode().Perm(), path)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		if uid := uint32(os.Geteuid()); sys.Uid != uid && sys.Uid != 0 {
			return fmt.Errorf("%w: %s belongs to uid %d, not to the agent's user (%d) or root", ErrUnsafeFile, path, sys.Uid, uid)
		}
	}
	return nil
}
