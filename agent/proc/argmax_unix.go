//go:build unix

package proc

import (
	"errors"
	"syscall"
)

// isArgsTooLong reports whether starting a program failed because its
// arguments and environment exceed the system's limit.
func isArgsTooLong(err error) bool { return errors.Is(err, syscall.E2BIG) }
