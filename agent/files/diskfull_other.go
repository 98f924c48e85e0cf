//go:build !unix && !windows

package files

// diskFullErrnos is empty where the platform's errors are not known.
var diskFullErrnos []error
