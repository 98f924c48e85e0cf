//go:build !unix

package files

import "os"

// readFlags opens a file for reading.
const readFlags = os.O_RDONLY

// tempFlags are added to the flags a temporary file is created with.
const tempFlags = 0
