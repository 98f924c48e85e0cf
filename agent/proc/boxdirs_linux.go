package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// boxDirs counts this process's users of each directory of boxes
// (outpost-<pid> in a hierarchy): every Manager of the process shares it,
// the first to need it makes it and the last to close removes it. Removed
// by the first Manager to close, it was gone under the others.
var boxDirs = struct {
	sync.Mutex
	users map[string]int
}{users: map[string]int{}}

// holdBoxDir makes dir unless this process holds it already, and counts
// one more user of it.
func holdBoxDir(dir string) error {
	boxDirs.Lock()
	defer boxDirs.Unlock()
	if boxDirs.users[dir] == 0 {
		err := os.Mkdir(dir, 0o755)
		switch {
		case errors.Is(err, os.ErrExist):
			// Left by an earlier process with this pid: its boxes, numbered
			// from 1 as this process's will be, go (those that hold none).
			removeBoxes(dir)
		case err != nil:
			return err
		}
	}
	boxDirs.users[dir]++
	return nil
}

// dropBoxDir counts one user less of dir, and removes it (when empty)
// after the last.
func dropBoxDir(dir string) {
	boxDirs.Lock()
	defer boxDirs.Unlock()
	if n := boxDirs.users[dir] - 1; n > 0 {
		boxDirs.users[dir] = n
		return
	}
	delete(boxDirs.users, dir)
	os.Remove(dir)
}

// sweepBoxDirs removes the directories of boxes under parent that agents
// no longer running left behind (killed, they could not remove them):
// each outpost-<pid> whose process is gone, with its boxes, when they hold
// no process. It returns how many it removed.
func sweepBoxDirs(parent string) int {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		num, ok := strings.CutPrefix(e.Name(), "outpost-")
		pid, err := strconv.Atoi(num)
		if !ok || !e.IsDir() || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue // alive, or not ours to know
		}
		dir := filepath.Join(parent, e.Name())
		removeBoxes(dir)
		if os.Remove(dir) == nil {
			n++
		}
	}
	return n
}

// removeBoxes removes the boxes under dir that hold no process.
func removeBoxes(dir string) {
	boxes, _ := os.ReadDir(dir)
	for _, b := range boxes {
		if b.IsDir() {
			os.Remove(filepath.Join(dir, b.Name())) // fails while it holds a process
		}
	}
}
