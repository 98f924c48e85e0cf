//go:build !linux && !darwin

package proc

import (
	"errors"
	"os/exec"
)

// newConfiner: no mechanism here yet (windows would need a job object).
func newConfiner() confiner { return noConfiner{} }

type noConfiner struct{}

func (noConfiner) mechanism() string { return LimitsByNone }

func (noConfiner) prepare(*exec.Cmd, Resources) (box, error) {
	return nil, errors.New("proc: this platform cannot apply process limits")
}
