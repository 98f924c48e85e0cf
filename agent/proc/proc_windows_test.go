package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/windows"
)

// alive reports whether pid is a process that has not exited.
func alive(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false // no such process
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == uint32(windows.WAIT_TIMEOUT)
}

// TestJobObject: a process started suspended runs once newGroup put it in
// its job, and killing or closing the job ends the children it started too.
func TestJobObject(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		end    func(group) error
		closes bool // end closes the job's handle
	}{
		{"kill", group.kill, false},
		{"signal", func(g group) error { return g.signal(termSignal) }, false},
		{"close, as when the agent dies", func(g group) error { g.close(); return nil }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(self)
			cmd.Dir, cmd.Env, cmd.SysProcAttr = dir, append(os.Environ(), helperEnv+"=tree"), sysProcAttr()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			g, err := newGroup(cmd.Process)
			if err != nil {
				_ = cmd.Wait()
				t.Fatalf("newGroup: %v", err)
			}
			// The pid file shows the suspended leader was resumed and
			// started its child.
			grandchild := readPid(t, filepath.Join(dir, grandchildPid))
			if err := tt.end(g); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if got := exitCode(cmd.ProcessState); got != 1 {
				t.Errorf("exit code %d, want 1, as os.Process.Kill gives", got)
			}
			wantDead(t, grandchild)
			if !tt.closes {
				g.close()
			}
		})
	}
}
