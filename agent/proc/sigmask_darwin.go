package proc

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The calling thread's signal mask on darwin: XNU keeps the mask per
// thread, and execve gives the new image the calling thread's, which is
// what the shim needs before its exec. x/sys/unix has no wrapper for it on
// darwin, so this is the system call libc's pthread_sigmask makes,
// __pthread_sigmask (as a direct trap: unix.RawSyscall). sigset_t is a
// uint32 there.
const (
	darwinSigBlock   = 1 // SIG_BLOCK of <sys/signal.h>
	darwinSigSetmask = 3 // SIG_SETMASK
)

func pthreadSigmask(how int, set, old *uint32) error {
	_, _, errno := unix.RawSyscall(unix.SYS___PTHREAD_SIGMASK, uintptr(how), uintptr(unsafe.Pointer(set)), uintptr(unsafe.Pointer(old)))
	if errno != 0 {
		return errno
	}
	return nil
}

// threadMaskBlocked reports whether this thread has signals blocked.
func threadMaskBlocked() (bool, error) {
	var cur uint32
	if err := pthreadSigmask(darwinSigBlock, nil, &cur); err != nil {
		return false, err
	}
	return cur != 0, nil
}

// clearSignalMask empties this thread's signal mask (the shim's
// sigResetEnv).
func clearSignalMask() error {
	var empty uint32
	return pthreadSigmask(darwinSigSetmask, &empty, nil)
}
