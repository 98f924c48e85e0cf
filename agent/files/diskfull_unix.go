//go:build unix

package files

import "syscall"

// diskFullErrnos are the errors a full disk or an exhausted quota gives.
var diskFullErrnos = []error{syscall.ENOSPC, syscall.EDQUOT}
