//go:build windows

package files

import "golang.org/x/sys/windows"

// diskFullErrnos are the errors a full disk or an exhausted quota gives.
var diskFullErrnos = []error{windows.ERROR_DISK_FULL, windows.ERROR_HANDLE_DISK_FULL, windows.ERROR_DISK_QUOTA_EXCEEDED}
