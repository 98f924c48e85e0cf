//go:build !linux

package rawio

import "net"

// Conn is c (direct system calls are Linux's only).
func Conn(c net.Conn) net.Conn { return c }

// Wrap is c (direct system calls are Linux's only).
func Wrap(c net.Conn) net.Conn { return c }
