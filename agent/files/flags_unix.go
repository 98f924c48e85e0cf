//go:build unix

package files

import (
	"os"
	"syscall"
)

// readFlags opens without blocking, so that opening a FIFO cannot hang; Read
// then refuses anything that is not a regular file.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK

// tempFlags are added to the flags a temporary file is created with. It is
// a new regular file (O_EXCL), on which O_NONBLOCK changes nothing; opened
// without it, Go's os package makes two fcntl calls on every such file (to
// set O_NONBLOCK while it tries the file with its poller, and to clear it
// again): a restore creates one per file.
const tempFlags = syscall.O_NONBLOCK
