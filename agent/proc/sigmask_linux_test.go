package proc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// blockSignals adds sigs to this thread's signal mask.
func blockSignals(sigs ...syscall.Signal) error {
	var set unix.Sigset_t
	for _, sig := range sigs {
		set.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	}
	return unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil)
}
