package agent

import (
	"net"
	"os"
	"testing"

	"golang.org/x/sys/windows"
)

// Winsock's codes, as net.Dial wraps them, are refused and "try the next
// address".
func TestDialRefusedWinsock(t *testing.T) {
	wrap := func(e error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connectex", e)}
	}
	if !dialRefused(wrap(windows.WSAECONNREFUSED)) {
		t.Fatal("WSAECONNREFUSED is not refused")
	}
	if dialRefused(wrap(windows.WSAEADDRNOTAVAIL)) || !dialTryNext(wrap(windows.WSAEADDRNOTAVAIL)) {
		t.Fatal("WSAEADDRNOTAVAIL: not refused, but try the next address")
	}
	if dialTryNext(wrap(windows.WSAETIMEDOUT)) {
		t.Fatal("a timeout is not a reason to try the next address")
	}
}
