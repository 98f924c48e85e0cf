package controlplane

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
)

// Owner-only checks of the state dir and the secrets in it, as the agent's
// key files are checked (enroll): the state dir holds the credentials
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

// readPrivateFile reads a secret file of at most max bytes, refusing one
// its group or others may read or write.
func readPrivateFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkPrivateFile(path, fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return b, nil
}

func checkPrivateFile(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %#o, but it holds a secret: only its owner may read it; run: chmod 600 %s", path, perm, path)
	}
	return nil
}
