//go:build !unix

package files

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
