//go:build unix

package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outposthq/outpost/wire"
)

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		// pid (comm) S ...: the state follows the last ')'.
		s := string(b)
		return !strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z")
	}
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && !strings.HasPrefix(strings.TrimSpace(string(out)), "Z")
}

func TestExecKillsGroup(t *testing.T) {
	m, root := newTestManager(t)
	tests := []struct {
		name      string
		command   string
		timeout   time.Duration
		wantCode  int
		wantOut   string // a prefix of stdout
		wantTimed bool
	}{
		{"timeout", "sleep 30 & echo $! > pid; wait", 300 * time.Millisecond, 124, "", true},
		{"child holds pipe silently", "sleep 30 & echo $! > pid; echo done", 0, 0, "done\n", false},
		{"child holds pipe and talks", "(while :; do echo tick; sleep 0.05; done) & echo $! > pid", 0, 0, "tick\n", false},
		{"child without pipes", "sleep 30 >/dev/null 2>&1 & echo $! > pid; echo done", 0, 0, "done\n", false},
		{"grandchild outlives leader", "(trap '' TERM; sleep 30 & echo $! > pid; wait) & exit 7", 0, 7, "", false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(root, strconv.Itoa(i))
			mkdir(t, dir)
			start := time.Now()
			res, err := m.Exec(context.Background(), ExecRequest{Command: tt.command, Cwd: strconv.Itoa(i), Timeout: tt.timeout})
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if took := time.Since(start); took > generous {
				t.Errorf("Exec took %v", took)
			}
			if res.ExitCode != tt.wantCode || res.TimedOut != tt.wantTimed {
				t.Errorf("got exit %d timedOut %v, want %d %v", res.ExitCode, res.TimedOut, tt.wantCode, tt.wantTimed)
			}
			if !strings.HasPrefix(string(res.Stdout), tt.wantOut) {
				t.Errorf("stdout %q, want %q", res.Stdout, tt.wantOut)
			}
			wantDead(t, readPid(t, filepath.Join(dir, "pid")))
		})
	}
}

func TestExecContextKillsGroup(t *testing.T) {
	m, root := newTestManager(t)
	tests := []struct {
		name   string
		cancel bool
		code   wire.Code
	}{
		{"deadline", false, wire.CodeDeadlineExceeded},
		{"cancel", true, wire.CodeUnavailable},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(root, strconv.Itoa(i))
			mkdir(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if tt.cancel {
				ctx, cancel = context.WithCancel(context.Background())
				defer cancel()
				go func() {
					defer cancel()
					for deadline := time.Now().Add(generous); time.Now().Before(deadline); {
						if _, ok := tryReadPid(filepath.Join(dir, "pid")); ok {
							return
						}
						time.Sleep(10 * time.Millisecond)
					}
				}()
			}
			_, err := m.Exec(ctx, ExecRequest{Command: "sleep 30 & echo $! > pid; wait", Cwd: strconv.Itoa(i)})
			wantError(t, err, tt.code, "")
			wantDead(t, readPid(t, filepath.Join(dir, "pid")))
		})
	}
}

func TestCloseKillsRunning(t *testing.T) {
	m, root := newTestManager(t)
	errc := make(chan error, 1)
	go func() {
		_, err := m.Exec(context.Background(), ExecRequest{Command: "sleep 30 & echo $! > pid; wait"})
		errc <- err
	}()
	pid := readPid(t, filepath.Join(root, "pid"))
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		wantError(t, err, wire.CodeUnavailable, "")
	case <-time.After(generous):
		t.Fatal("Exec still running after Close returned")
	}
	wantDead(t, pid)
	_, err := m.Exec(context.Background(), ExecRequest{Argv: []string{"true"}})
	wantError(t, err, wire.CodeUnavailable, "")
}

func TestExecConcurrent(t *testing.T) {
	m, _ := newTestManager(t)
	errc := make(chan error, 20)
	for i := range 20 {
		go func() {
			want := strconv.Itoa(i) + "\n"
			res, err := m.Exec(context.Background(), ExecRequest{Argv: []string{"echo", strconv.Itoa(i)}})
			if err == nil && string(res.Stdout) != want {
				err = errors.New("stdout " + strconv.Quote(string(res.Stdout)) + ", want " + strconv.Quote(want))
			}
			errc <- err
		}()
	}
	for range 20 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}

// TestTimeoutEndsTheDrain: the timeout bounds the whole run. Output
// collection after the leader's exit ends when it expires, before the 2 s
// it could last, and the group is killed; the exit code stays the
// leader's, which did not time out.
func TestTimeoutEndsTheDrain(t *testing.T) {
	m, root := newTestManager(t)
	const command = "(while :; do echo tick; sleep 0.05; done) & echo $! > pid; exit 5"
	const timeout = 500 * time.Millisecond
	for i, via := range []string{"exec", "start"} {
		t.Run(via, func(t *testing.T) {
			cwd := strconv.Itoa(i)
			mkdir(t, filepath.Join(root, cwd))
			began := time.Now()
			var code int
			var timedOut bool
			if via == "exec" {
				res, err := m.Exec(context.Background(), ExecRequest{Command: command, Cwd: cwd, Timeout: timeout})
				if err != nil {
					t.Fatal(err)
				}
				code, timedOut = res.ExitCode, res.TimedOut
			} else {
				info := waitClosed(t, m, start(t, m, StartRequest{Command: command, Cwd: cwd, Timeout: timeout}))
				code, timedOut = *info.ExitCode, info.TimedOut
			}
			if took := time.Since(began); took >= drainMax {
				t.Errorf("closed after %v: the collection outlived the timeout", took)
			}
			if code != 5 || timedOut {
				t.Errorf("exit %d timedOut %v, want 5 false", code, timedOut)
			}
			wantDead(t, readPid(t, filepath.Join(root, cwd, "pid")))
		})
	}
}

// TestTerminateKeepsTheDrain: terminate is graceful. When its TERM ends the
// leader, what the rest of the group still writes is collected as after
// any exit; only a stop that kills (timeout, close) skips that.
func TestTerminateKeepsTheDrain(t *testing.T) {
	m, _ := newTestManager(t)
	id := start(t, m, StartRequest{Command: "trap '' TERM; (sleep 0.1; echo bye) & trap 'exit 0' TERM; echo ready; while :; do sleep 0.05; done"})
	waitOutput(t, m, id, "ready")
	if was, err := m.Terminate(id); !was || err != nil {
		t.Fatalf("terminate = %v, %v", was, err)
	}
	tr := readToClose(t, m, id, 0, 0)
	if tr.exitCode != 0 || tr.text("stdout") != "ready\nbye\n" {
		t.Fatalf("exit %d stdout %q, want 0 and the child's goodbye", tr.exitCode, tr.text("stdout"))
	}
}
