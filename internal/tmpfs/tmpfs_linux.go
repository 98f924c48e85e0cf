//go:build linux

package tmpfs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func mount(dir string, size int64) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("not root")
	}
	return unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size))
}

func unmount(dir string) error { return unix.Unmount(dir, unix.MNT_DETACH) }
