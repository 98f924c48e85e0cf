//go:build !unix

package fs

import "errors"

// mkfifo is unavailable here.
func mkfifo(string) error { return errors.New("no named pipes") }
