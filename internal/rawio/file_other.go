//go:build !linux

package rawio

import (
	"io"
	"os"
)

// File is f (direct system calls are Linux's only).
func File(f *os.File) io.ReadWriter { return f }
