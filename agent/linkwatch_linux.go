package agent

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// linkNotifications subscribes to the kernel's link, address and route
// changes (rtnetlink) and signals on the returned channel when any comes;
// the message itself is not parsed: the watcher then looks at the
// interfaces. nil when the socket cannot be made (the ticker still runs).
func linkNotifications(stop <-chan struct{}) (<-chan struct{}, func()) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, func() {}
	}
	groups := uint32(unix.RTMGRP_LINK | unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR |
		unix.RTMGRP_IPV4_ROUTE | unix.RTMGRP_IPV6_ROUTE)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: groups}); err != nil {
		unix.Close(fd)
		return nil, func() {}
	}
	// A non-blocking descriptor in an *os.File waits in the runtime's
	// poller, so closing the file ends a read in progress.
	f := os.NewFile(uintptr(fd), "rtnetlink")
	ch := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		<-stop
		f.Close()
	}()
	go func() {
		defer wg.Done()
		defer close(ch)
		buf := make([]byte, 64<<10)
		for {
			if _, err := f.Read(buf); err != nil {
				// ENOBUFS: the kernel dropped messages; a look is due anyway.
				if !errors.Is(err, unix.ENOBUFS) {
					return
				}
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	return ch, wg.Wait
}
