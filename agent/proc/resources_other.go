//go:build !linux

package proc

import (
	"errors"
	"os/exec"
)

// newConfiner: no mechanism here yet (darwin would need a launchd or
// sandbox wrapper, windows a job object).
func newConfiner() confiner { return noConfiner{} }

type noConfiner struct{}

func (noConfiner) mechanism() string { return LimitsByNone }

func (noConfiner) prepare(*exec.Cmd, Resources) (box, error) {
	return nil, errors.New("proc: this platform cannot apply process limits")
}
