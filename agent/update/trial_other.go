//go:build !linux && !windows

package update

import "os/exec"

// dieWithParent does nothing here: these systems have no parent-death
// signal. The trial watches its parent instead (Trial.WaitStop) and stops
// serving when the agent that started it dies.
func dieWithParent(*exec.Cmd) (started func() error, release func(), err error) {
	return func() error { return nil }, func() {}, nil
}
