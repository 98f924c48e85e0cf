package proc

import "syscall"

// blockSignals adds sigs to this thread's signal mask.
func blockSignals(sigs ...syscall.Signal) error {
	var set uint32
	for _, sig := range sigs {
		set |= 1 << (uint(sig) - 1)
	}
	return pthreadSigmask(darwinSigBlock, &set, nil)
}
