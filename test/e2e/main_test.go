// Package e2e tests the whole system: the real outpost binary as control plane
// and agents, a real embedded nats-server, real processes, files and git.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// outpostBin is the binary built once for all tests.
var outpostBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "outpost-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	defer func() {
		if buildsDir != "" {
			os.RemoveAll(buildsDir)
		}
	}()
	outpostBin = filepath.Join(dir, "outpost")
	build := exec.Command("go", "build", "-o", outpostBin, "../../cmd/outpost")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build outpost:", err)
		return 1
	}
	return m.Run()
}
