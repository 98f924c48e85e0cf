package agent

import (
	"errors"
	"syscall"

	"golang.org/x/sys/windows"
)

// dialRefused reports whether a dial failed because nothing listens.
// Winsock reports WSAECONNREFUSED (10061), which is not the syscall
// package's ECONNREFUSED on Windows (an invented value errors.Is does not
// match).
func dialRefused(err error) bool {
	return errors.Is(err, windows.WSAECONNREFUSED) || errors.Is(err, syscall.ECONNREFUSED)
}

// dialTryNext reports whether a failed dial to one loopback address
// should try the next (refused, or the address family not there).
func dialTryNext(err error) bool {
	return dialRefused(err) || errors.Is(err, windows.WSAEADDRNOTAVAIL) || errors.Is(err, windows.WSAENETUNREACH) ||
		errors.Is(err, windows.WSAEHOSTUNREACH) || errors.Is(err, windows.WSAEAFNOSUPPORT)
}
