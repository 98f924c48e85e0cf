//go:build windows

package proc

import (
	"errors"

	"golang.org/x/sys/windows"
)

// isArgsTooLong reports whether starting a program failed because its
// command line or environment exceeds the system's limit.
func isArgsTooLong(err error) bool {
	return errors.Is(err, windows.ERROR_FILENAME_EXCED_RANGE) || errors.Is(err, windows.ERROR_BAD_ENVIRONMENT)
}
