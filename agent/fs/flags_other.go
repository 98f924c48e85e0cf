//go:build !unix

package fs

import "os"

// readFlags opens a file for reading.
const readFlags = os.O_RDONLY
