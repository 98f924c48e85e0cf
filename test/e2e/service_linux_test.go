package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// On a fresh machine (a network namespace), `agent login` then `agent
// install` gives an agent that survives a kill and a control-plane restart.
// A systemd user manager cannot start in this test's container (systemd
// --user exits at once without PID 1 systemd), so the unit install writes
// (--dry-run) is run as systemd would run it: its ExecStart, restarted
// after any exit per Restart=always and RestartSec, by a supervisor this
// test starts. The unit itself is checked by systemd-analyze in
// agent/service.
func TestInstalledAgentSurvivesKillAndRestart(t *testing.T) {
	l := newNetLink(t)
	cp := startControlPlaneWith(t, cpConfig{natsHost: l.hostIP, tls: true})
	cp.workspace("default")
	home, root := t.TempDir(), t.TempDir()
	config := deviceLogin(t, l, cp, home, "laptop")

	unit := mustRunWithEnv(t, []string{"HOME=" + home}, "agent", "install", "--config", config, "--root", root, "--dry-run")
	for _, want := range []string{"/systemd/user/outpost-agent-default-laptop.service", "Restart=always", "WantedBy=default.target"} {
		if !strings.Contains(unit, want) {
			t.Fatalf("install --dry-run does not show %q:\n%s", want, unit)
		}
	}
	argv, restartSec := execStart(t, unit)
	if argv[0] != outpostBin || strings.Join(argv[1:], " ") != "agent run --config "+config+" --root "+root {
		t.Fatalf("ExecStart = %q", argv)
	}
	sup := startSupervisor(t, l, argv, restartSec)
	cp.waitStatus("default", "laptop", "online")
	first := sup.pid()

	// A kill: the supervisor starts it again, and it is back online.
	if err := exec.Command("kill", "-KILL", fmt.Sprint(first)).Run(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, statusTimeout, "a restarted agent", func() error {
		if p := sup.pid(); p == first || p == 0 {
			return errStatus("not restarted")
		}
		return nil
	})
	env := []string{"OUTPOST_URL=" + cp.url, "OUTPOST_TOKEN=" + adminToken, "OUTPOST_CA_FILE=" + cp.caFile()}
	waitFor(t, statusTimeout, "exec on the restarted agent", func() error {
		out, err := runWithEnv(env, "exec", "--agent", "laptop", "--", "echo", "after-kill")
		if err != nil || strings.TrimSpace(out) != "after-kill" {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})

	// A control-plane restart: the same daemon reconnects by itself.
	pid := sup.pid()
	cp.restart()
	cp.waitStatus("default", "laptop", "online")
	if out := mustRunWithEnv(t, env, "exec", "--agent", "laptop", "--", "echo", "after-restart"); strings.TrimSpace(out) != "after-restart" {
		t.Fatalf("exec after the control plane's restart: %q", out)
	}
	if sup.pid() != pid {
		t.Fatalf("the agent was restarted (pid %d, then %d) instead of reconnecting", pid, sup.pid())
	}
}

// execStart reads ExecStart (as systemd splits it: double quotes with
// backslash escapes, %% and $$ for % and $) and RestartSec from a unit.
func execStart(t *testing.T, unit string) ([]string, time.Duration) {
	t.Helper()
	var argv []string
	restart := time.Duration(0)
	for _, line := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(line, "RestartSec="); ok {
			d, err := time.ParseDuration(v + "s")
			if err != nil {
				t.Fatalf("RestartSec=%s: %v", v, err)
			}
			restart = d
		}
		v, ok := strings.CutPrefix(line, "ExecStart=")
		if !ok {
			continue
		}
		var word strings.Builder
		inWord, quoted := false, false
		for i := 0; i < len(v); i++ {
			c := v[i]
			switch {
			case quoted && c == '\\' && i+1 < len(v):
				i++
				word.WriteByte(v[i])
			case c == '"':
				quoted, inWord = !quoted, true
			case !quoted && c == ' ':
				if inWord {
					argv = append(argv, word.String())
					word.Reset()
					inWord = false
				}
			case (c == '%' || c == '$') && i+1 < len(v) && v[i+1] == c:
				i++
				word.WriteByte(c)
				inWord = true
			default:
				word.WriteByte(c)
				inWord = true
			}
		}
		if inWord {
			argv = append(argv, word.String())
		}
	}
	if len(argv) == 0 || restart == 0 {
		t.Fatalf("no ExecStart or RestartSec in:\n%s", unit)
	}
	return argv, restart
}

// supervisor runs a command in a namespace again and again, as systemd's
// Restart=always does: after any exit, it waits restartSec and starts it
// again, until the test ends.
type supervisor struct {
	mu      sync.Mutex
	current *proc
	stopped bool
	wg      sync.WaitGroup
}

func startSupervisor(t *testing.T, l *netLink, argv []string, restartSec time.Duration) *supervisor {
	s := &supervisor{}
	start := func() *proc {
		return startCommand(t, nil, l.command(argv[0], argv[1:]...))
	}
	s.current = start()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			s.mu.Lock()
			p := s.current
			s.mu.Unlock()
			<-p.done
			time.Sleep(restartSec) // RestartSec: the pause systemd makes too
			s.mu.Lock()
			if s.stopped {
				s.mu.Unlock()
				return
			}
			s.current = start()
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		s.mu.Lock()
		s.stopped = true
		p := s.current
		s.mu.Unlock()
		p.kill()
		s.wg.Wait()
		s.mu.Lock()
		s.current.kill()
		s.mu.Unlock()
	})
	return s
}

// pid is the agent's pid: the command `ip netns exec` runs execs it, so
// the pid is the same process.
func (s *supervisor) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.current.done:
		return 0
	default:
		return s.current.cmd.Process.Pid
	}
}
