//go:build linux

package main

import (
	"errors"
	"io"
	"os"
	"strconv"

	"github.com/outposthq/outpost/internal/rawio"
	"golang.org/x/sys/unix"
)

// terminalIO is what an attachment reads its input from and writes its
// output to: stdin and stdout opened anew (file descriptions of their
// own) in non-blocking mode, when they are pipes or terminals. Their
// reads and writes then wait on Go's poller, as the socket's do, and are
// direct system calls (rawio): one thread waits for the keystroke and
// the echo alike, as ssh's poll loop does, instead of a thread blocked in
// read(2) for stdin, and the runtime's monitor is not woken on each. The
// descriptions shared with the shell stay as they were (blocking). Where
// that cannot be (a file, a socket, a writer that is not stdout), in and
// out as they are. (Like stdin itself, what is opened lasts as long as the
// CLI.)
func terminalIO(in io.Reader, out io.Writer) (io.Reader, io.Writer) {
	if in == os.Stdin {
		if f := reopen(0, unix.O_RDONLY); f != nil {
			in = rawio.File(f)
		}
	}
	if out == os.Stdout {
		if f := reopen(1, unix.O_WRONLY); f != nil {
			out = stdoutWriter{rawio.File(f)}
		}
	}
	return in, out
}

// stdoutWriter is stdout opened anew: when its reader is gone (EPIPE),
// what is left goes to os.Stdout, whose write then ends the CLI by
// SIGPIPE as Go does for descriptor 1 (a filter's end in a pipeline:
// `outpost exec ... | head -1`), and not as an interrupted attach.
type stdoutWriter struct{ w io.Writer }

func (s stdoutWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if errors.Is(err, unix.EPIPE) && n < len(p) {
		m, err := os.Stdout.Write(p[n:])
		return n + m, err
	}
	return n, err
}

// reopen opens descriptor fd again, non-blocking, when it is a pipe or a
// terminal; nil otherwise. (A file opened again would start at offset 0
// and, for writing, not append; any other character device opened again
// is another open of the device, maybe other data (a PTY master's is a
// new PTY), and may not honour O_NONBLOCK.)
func reopen(fd, mode int) *os.File {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return nil
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
	case unix.S_IFCHR:
		if !terminalSide(fd, st.Rdev) {
			return nil
		}
	default:
		return nil
	}
	nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), mode|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(nfd), "/dev/fd/"+strconv.Itoa(fd))
}

// terminalSide says whether fd is a terminal that opened again is the
// same terminal: not a PTY's master side (Unix 98: TIOCGPTN answers;
// BSD-style: major 2), which opened again is a new PTY.
func terminalSide(fd int, rdev uint64) bool {
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return false
	}
	if _, err := unix.IoctlGetInt(fd, unix.TIOCGPTN); err == nil {
		return false
	}
	return unix.Major(rdev) != 2
}
