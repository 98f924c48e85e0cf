//go:build !linux

package files

import "os"

// beneathDir is nothing here: see openread_linux.go.
type beneathDir struct{}

// openRead opens root-relative file c for reading.
func (f *FS) openRead(c string) (*os.File, error) {
	return f.root.OpenFile(native(c), readFlags, 0)
}

func (*beneathDir) close() {}
