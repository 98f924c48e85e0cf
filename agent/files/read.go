package files

import (
	"io"
	iofs "io/fs"
	"os"
)

// Read opens file p for reading length bytes from offset; a negative length
// reads to the end. Symbolic links are followed while they stay inside the
// root. The Entry describes the opened file, with p's path. An offset past the
// end is ErrInvalid; a range past the end is shortened. The caller closes
// the reader.
func (f *FS) Read(p string, offset, length int64) (io.ReadCloser, Entry, error) {
	c, err := Clean(p)
	if err != nil {
		return nil, Entry{}, err
	}
	if isTemp(c) {
		return nil, Entry{}, tempNotFound("read", c)
	}
	if offset < 0 {
		return nil, Entry{}, errorf(iofs.ErrInvalid, "read %s: negative offset %d", c, offset)
	}
	file, err := f.root.OpenFile(native(c), readFlags, 0)
	if err != nil {
		return nil, Entry{}, mapErr("read", c, err)
	}
	e, err := openedEntry(file, c, offset)
	if err != nil {
		file.Close()
		return nil, Entry{}, err
	}
	n := e.Size - offset
	if length >= 0 && length < n {
		n = length
	}
	return &rangeReader{Reader: io.NewSectionReader(file, offset, n), file: file}, e, nil
}

// openedEntry stats an opened file and checks that it is a regular file that
// offset fits in.
func openedEntry(file *os.File, c string, offset int64) (Entry, error) {
	fi, err := file.Stat()
	if err != nil {
		return Entry{}, mapErr("read", c, err)
	}
	e := entryOf(c, fi, "")
	if e.Type != TypeFile {
		return Entry{}, errorf(iofs.ErrInvalid, "read %s: not a regular file (%s)", c, e.Type)
	}
	if offset > e.Size {
		return Entry{}, errorf(iofs.ErrInvalid, "read %s: offset %d past end (%d bytes)", c, offset, e.Size)
	}
	return e, nil
}

// rangeReader reads a section of a file and closes the file.
type rangeReader struct {
	io.Reader
	file *os.File
}

// Close closes the file.
func (r *rangeReader) Close() error { return r.file.Close() }
