//go:build windows

package proc

import (
	"errors"

	"golang.org/x/sys/windows"
)

// isArgsTooLong reports whether starting a program failed because its
// command line exceeds the system's limit (32767 characters).
func isArgsTooLong(err error) bool {
	return errors.Is(err, windows.ERROR_FILENAME_EXCED_RANGE)
}
