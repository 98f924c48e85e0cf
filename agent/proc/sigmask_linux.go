package proc

import "golang.org/x/sys/unix"

// threadMaskBlocked reports whether this thread has signals blocked.
func threadMaskBlocked() (bool, error) {
	var cur unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, nil, &cur); err != nil {
		return false, err
	}
	blocked := false
	for _, w := range cur.Val {
		blocked = blocked || w != 0
	}
	return blocked, nil
}

// clearSignalMask empties this thread's signal mask (the shim's
// sigResetEnv).
func clearSignalMask() error {
	var empty unix.Sigset_t
	return unix.PthreadSigmask(unix.SIG_SETMASK, &empty, nil)
}
