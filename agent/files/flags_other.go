//go:build !unix

package files

import "os"

// readFlags opens a file for reading.
const readFlags = os.O_RDONLY
