package proc

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestWaitExitLeavesAZombie: waitExit reports the exit code cmd.Wait would,
// exits and signals alike, and leaves the leader unreaped, its pid (the
// group's id) reserved.
func TestWaitExitLeavesAZombie(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   int
	}{
		{"exit 0", "exit 0", 0},
		{"exit 3", "exit 3", 3},
		{"exit 255", "exit 255", 255},
		{"TERM", "kill -TERM $$", 128 + 15},
		{"KILL", "kill -KILL $$", 128 + 9},
		{"dumping core", "ulimit -c unlimited 2>/dev/null; kill -QUIT $$", 128 + 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", tt.script)
			cmd.Dir = t.TempDir() // for a core file
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			code, ok := waitExit(cmd.Process)
			if _, err := os.Stat("/proc/" + strconv.Itoa(cmd.Process.Pid)); err != nil {
				t.Errorf("the leader was reaped: %v", err)
			}
			_ = cmd.Wait()
			if !ok || code != tt.want {
				t.Fatalf("waitExit = %d, %v; want %d, true", code, ok, tt.want)
			}
			if got := exitCode(cmd.ProcessState); got != code {
				t.Fatalf("cmd.Wait says %d, waitExit %d", got, code)
			}
		})
	}
}
