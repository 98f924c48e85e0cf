//go:build !hoptrace

package hoptrace

import "io"

// Enabled reports whether this build records hops.
const Enabled = false

// Mark records that the current keystroke reached hop h (a no-op without
// the build tag hoptrace).
func Mark(int) {}

// Report writes the hops' delays (nothing without the build tag hoptrace).
func Report(io.Writer) {}
