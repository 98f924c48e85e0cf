package filelock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A second process cannot take a held lock; once the holder closes it, it
// can. The second taker runs in a child process, as outpost up's would.
func TestLockExcludesAnotherProcess(t *testing.T) {
	if os.Getenv("FILELOCK_CHILD") != "" {
		_, err := Lock(os.Getenv("FILELOCK_CHILD"))
		if errors.Is(err, ErrLocked) {
			os.Exit(3)
		}
		if err != nil {
			os.Exit(4)
		}
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "lock")
	child := func() int {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockExcludesAnotherProcess$")
		cmd.Env = append(os.Environ(), "FILELOCK_CHILD="+path)
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	f, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file: %v, %v; want mode 0600", fi, err)
	}
	if got := child(); got != 3 {
		t.Fatalf("second process: exit %d, want 3 (ErrLocked)", got)
	}
	f.Close()
	if got := child(); got != 0 {
		t.Fatalf("after unlock: exit %d, want 0", got)
	}
}
