// Package filelock takes exclusive, non-blocking locks on files: one
// process at a time owns a state directory (outpost up), and the lock dies
// with the process that holds it, so a crash leaves nothing to clean up.
package filelock

import (
	"errors"
	"fmt"
	"os"
)

// ErrLocked is returned (wrapped) when another process holds the lock.
var ErrLocked = errors.New("locked by another process")

// Lock takes the lock on path (created 0600). It is held until the
// returned file is closed or the process ends.
func Lock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := lock(f); err != nil {
		f.Close()
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}
