//go:build unix

package files

import (
	"os"
	"syscall"
)

// readFlags opens without blocking, so that opening a FIFO cannot hang; Read
// then refuses anything that is not a regular file.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK
