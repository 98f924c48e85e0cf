package agent

import (
	"os"
	"strconv"
)

// openedPath is the host path of the file f has open, from /proc.
func openedPath(f *os.File) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	return p, err == nil
}
