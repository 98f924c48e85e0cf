package main

import (
	"io"
	"os"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// TestReopenLeavesSharedDescription: the attachment's stdin is a file
// description of its own, non-blocking, on the same pipe; the one the
// CLI was given (and its shell shares) stays blocking. A regular file is
// not opened again (that would read from its start).
func TestReopenLeavesSharedDescription(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer func() { // not p[1] as it was at the defer: it is closed below, its number maybe reused
		if p[1] >= 0 {
			unix.Close(p[1])
		}
	}()
	f := reopen(p[0], unix.O_RDONLY)
	if f == nil {
		t.Fatal("a pipe's read end was not opened again")
	}
	defer f.Close()
	if fl, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Fatalf("the given descriptor's flags %#x, %v: want it blocking still", fl, err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fl int
	if err := rc.Control(func(fd uintptr) { fl, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil || fl&unix.O_NONBLOCK == 0 {
		t.Fatalf("the new description's flags %#x, %v: want it non-blocking", fl, err)
	}
	if _, err := unix.Write(p[1], []byte("typed")); err != nil {
		t.Fatal(err)
	}
	unix.Close(p[1])
	p[1] = -1
	got, err := io.ReadAll(f)
	if err != nil || string(got) != "typed" {
		t.Fatalf("read %q, %v through the new description", got, err)
	}

	reg, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if g := reopen(int(reg.Fd()), unix.O_RDONLY); g != nil {
		g.Close()
		t.Fatal("a regular file was opened again")
	}
}

// TestReopenTerminal: a terminal (a PTY's slave side, as a shell's) is
// opened again, non-blocking, the given description left blocking; a
// PTY's master side (opened again: a new PTY) and another character
// device (/dev/null) are not.
func TestReopenTerminal(t *testing.T) {
	m, s, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer s.Close()
	sfd := int(s.Fd()) // blocking
	f := reopen(sfd, unix.O_RDONLY)
	if f == nil {
		t.Fatal("a terminal was not opened again")
	}
	defer f.Close()
	if fl, err := unix.FcntlInt(uintptr(sfd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Fatalf("the given descriptor's flags %#x, %v: want it blocking still", fl, err)
	}
	if _, err := m.Write([]byte("typed\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := f.Read(buf)
	if err != nil || string(buf[:n]) != "typed\n" {
		t.Fatalf("read %q, %v through the new description", buf[:n], err)
	}
	if g := reopen(int(m.Fd()), unix.O_RDONLY); g != nil {
		g.Close()
		t.Fatal("a PTY master was opened again (that is a new PTY)")
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if g := reopen(int(null.Fd()), unix.O_RDONLY); g != nil {
		g.Close()
		t.Fatal("/dev/null was opened again")
	}
}
