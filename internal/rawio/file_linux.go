//go:build linux

package rawio

import (
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// File is f with its small reads and writes made by direct system calls,
// when f is a pipe, a terminal or PTY, or a socket in non-blocking mode
// (on Go's poller: opened so, os.Pipe's, a PTY master); f itself
// otherwise (a regular file's reads wait for the disk whatever the mode).
func File(f *os.File) io.ReadWriter {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	ok := false
	if rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil || fl&unix.O_NONBLOCK == 0 || unix.Fstat(int(fd), &st) != nil {
			return
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFIFO, unix.S_IFCHR, unix.S_IFSOCK:
			ok = true
		}
	}) != nil || !ok {
		return f
	}
	return &file{f: f, ops: newOps(rc)}
}

type file struct {
	f   *os.File
	ops *ops
}

func (f *file) Read(p []byte) (int, error) {
	if len(p) == 0 || len(p) > Max {
		return f.f.Read(p)
	}
	n, err := f.ops.read(p)
	if err != nil {
		return 0, &os.PathError{Op: "read", Path: f.f.Name(), Err: fileError(err)}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (f *file) Write(p []byte) (int, error) {
	if len(p) > Max {
		return f.f.Write(p)
	}
	n, err := f.ops.write(p)
	if err != nil {
		return n, &os.PathError{Op: "write", Path: f.f.Name(), Err: fileError(err)}
	}
	return n, nil
}

// fileError is err as the file's own Read and Write say it: a closed
// file's SyscallConn answers internal/poll's ErrFileClosing, which they
// turn into os.ErrClosed.
func fileError(err error) error {
	if c := errFileClosing(); c != nil && err == c {
		return os.ErrClosed
	}
	return err
}

// errFileClosing is what a closed file's SyscallConn Read answers (nil if
// that cannot be learnt).
var errFileClosing = sync.OnceValue(func() error {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	w.Close()
	rc, err := r.SyscallConn()
	r.Close()
	if err != nil {
		return nil
	}
	return rc.Read(func(uintptr) bool { return true })
})
