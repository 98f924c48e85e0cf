package controlplane

import (
	"fmt"
	"os"
	"runtime"
)

// Owner-only checks of the state dir and the secrets in it, as the agent's
// key files are checked (internal/secretfile): the state dir holds the credentials
// authority's keys and the admin token. On Windows, modes do not say who
// may read a file; ACLs do, and they are not checked.

// checkStateDir refuses a state dir that is not a directory, or that its
// group or others may enter or list.
func checkStateDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("state dir %s is not a directory", dir)
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return fmt.Errorf("state dir %s has mode %#o, but it holds the control plane's signing keys and admin token: only its owner may have access; run: chmod 700 %s", dir, perm, dir)
	}
	return nil
}
