//go:build !linux

package agent

import "os"

// openedPath: not known here; the dispatch check stands alone.
func openedPath(*os.File) (string, bool) { return "", false }
