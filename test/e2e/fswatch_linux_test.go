package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestFsWatchOverBinary: outpost fs watch -r prints a line per change.
func TestFsWatchOverBinary(t *testing.T) {
	e := newAgentEnv(t)
	if err := os.MkdirAll(filepath.Join(e.root, "d", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(outpostBin, "fs", "watch", "-r", "d")
	cmd.Env = append(os.Environ(), "OUTPOST_URL="+e.cp.url, "OUTPOST_TOKEN="+adminToken, "OUTPOST_WORKSPACE="+e.ws, "OUTPOST_AGENT="+e.id)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Until the watch is live, a write is repeated; then a file in a
	// subdirectory must show.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	live := false
	for !live {
		select {
		case l := <-lines:
			live = l == "create d/probe" || l == "write d/probe"
		case <-tick.C:
			os.WriteFile(filepath.Join(e.root, "d", "probe"), []byte("p"), 0o644)
		case <-deadline:
			t.Fatal("fs watch printed nothing for the probe")
		}
	}
	if err := os.WriteFile(filepath.Join(e.root, "d", "sub", "x.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case l := <-lines:
			if l == "create d/sub/x.txt" {
				return
			}
		case <-deadline:
			t.Fatal("no line for d/sub/x.txt")
		}
	}
}
