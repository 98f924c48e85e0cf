//go:build !unix

package files

import "errors"

// mkfifo is unavailable here.
func mkfifo(string) error { return errors.New("no named pipes") }
