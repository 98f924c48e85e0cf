package update

import "os/exec"

// dieWithParent: see trial_linux.go. TODO(windows) job object.
func dieWithParent(*exec.Cmd) (started func() error, release func(), err error) {
	return func() error { return nil }, func() {}, nil
}
