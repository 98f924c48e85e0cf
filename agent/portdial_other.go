//go:build !windows

package agent

import (
	"errors"
	"syscall"
)

// dialRefused reports whether a dial failed because nothing listens.
func dialRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// dialTryNext reports whether a failed dial to one loopback address
// should try the next (refused, or the address family not there).
func dialTryNext(err error) bool {
	return dialRefused(err) || errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.ENETUNREACH)
}
