// Package leaktest fails a package's tests when goroutines of the package
// outlive them: every goroutine needs an owner and an end.
package leaktest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// grace is how long goroutines may take to end after the tests passed.
const grace = 5 * time.Second

// Main runs m and, when the tests passed, waits up to 5 s for every
// goroutine whose stack contains match (e.g. "outpost/routing.") to end. It
// exits 1, printing their stacks, if some do not. Call it from TestMain.
func Main(m *testing.M, match string) {
	code := m.Run()
	if code == 0 {
		if leaked := wait(match, grace); leaked != "" {
			fmt.Fprintf(os.Stderr, "leaked goroutines:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// wait polls until no goroutine but this one matches, and returns the
// stacks of those still running at the deadline.
func wait(match string, d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, match) && !strings.Contains(g, "internal/leaktest.") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
