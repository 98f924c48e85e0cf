package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// On a fresh machine (a network namespace), `agent login` then `agent
// install` gives an agent that survives a kill, a control-plane restart
// and a self-update, and after the update still survives a kill and a
// control-plane restart.
// A systemd user manager cannot start in this test's container (systemd
// --user exits at once without PID 1 systemd), so the unit install writes
// (--dry-run) is run as systemd would run it: its ExecStart, restarted
// after any exit per Restart=always and RestartSec, by a supervisor this
// test starts. The unit itself is checked by systemd-analyze in
// agent/service.
//
// The binary is a release build (-tags agent, version 1.0.0, the release
// key built in) put where a user would put it; the update is to a second
// real build (1.1.0), published signed and served by the control plane.
func TestInstalledAgentSurvivesKillRestartAndUpdate(t *testing.T) {
	l := newNetLink(t)
	releases := t.TempDir()
	cp := startControlPlaneWith(t, cpConfig{natsHost: l.hostIP, tls: true, releases: releases})
	cp.workspace("default")
	key, pub := sharedReleaseKey(t)
	v1, v2 := readFile(t, agentBuild(t, "1.0.0", pub)), agentBuild(t, "1.1.0", pub)
	home, root := t.TempDir(), t.TempDir()
	exe := filepath.Join(home, ".local", "bin", "outpost")
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, v1, 0o755); err != nil {
		t.Fatal(err)
	}
	config := deviceLogin(t, l, cp, exe, home, "laptop")

	unit := mustRunCommand(t, []string{"HOME=" + home}, exe, "agent", "install", "--config", config, "--root", root, "--update-check", "1s", "--dry-run")
	for _, want := range []string{"/systemd/user/outpost-agent-default-laptop.service", "Restart=always", "WantedBy=default.target"} {
		if !strings.Contains(unit, want) {
			t.Fatalf("install --dry-run does not show %q:\n%s", want, unit)
		}
	}
	argv, restartSec := execStart(t, unit)
	if argv[0] != exe || strings.Join(argv[1:], " ") != "agent run --config "+config+" --root "+root+" --update-check 1s" {
		t.Fatalf("ExecStart = %q", argv)
	}
	sup := startSupervisor(t, l, argv, restartSec)
	env := []string{"OUTPOST_URL=" + cp.url, "OUTPOST_TOKEN=" + adminToken, "OUTPOST_CA_FILE=" + cp.caFile()}
	serves := func(version, what string) {
		t.Helper()
		waitAgentVersion(t, cp, "laptop", version)
		waitFor(t, statusTimeout, "exec on the agent "+what, func() error {
			out, err := runWithEnv(env, "exec", "--agent", "laptop", "--", "echo", what)
			if err != nil || strings.TrimSpace(out) != what {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
	}
	serves("1.0.0", "installed")

	survivesKill := func(version string) {
		t.Helper()
		first := sup.pid()
		if err := exec.Command("kill", "-KILL", fmt.Sprint(first)).Run(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, statusTimeout, "a restarted agent", func() error {
			if p := sup.pid(); p == first || p == 0 {
				return errStatus("not restarted")
			}
			return nil
		})
		serves(version, "after-kill-"+version)
	}
	survivesRestart := func(version string) {
		t.Helper()
		pid := sup.pid()
		cp.restart()
		cp.waitStatus("default", "laptop", "online")
		serves(version, "after-restart-"+version)
		if sup.pid() != pid {
			t.Fatalf("the agent was restarted (pid %d, then %d) instead of reconnecting", pid, sup.pid())
		}
	}

	// A kill: the supervisor starts it again. A control-plane restart: the
	// same daemon reconnects by itself.
	survivesKill("1.0.0")
	survivesRestart("1.0.0")

	// An update: published while it runs, taken at its next check, tried
	// and kept; the same process (re-executed) serves as 1.1.0, without
	// the supervisor seeing it stop.
	pid := sup.pid()
	mustRunWithEnv(t, nil, "release", "publish", "--key", key, "--dir", releases, "--version", "1.1.0", goPlatform(t)+"="+v2)
	waitFor(t, statusTimeout*2, "the update's trial to pass", func() error {
		// The trial serves too, briefly: the handoff is over when the
		// old process re-executes.
		if !strings.Contains(sup.output(), "updated; restarting as the new version") {
			return errStatus("not yet")
		}
		return nil
	})
	serves("1.1.0", "updated")
	if sup.pid() != pid {
		t.Fatalf("the update restarted the agent through its supervisor (pid %d, then %d)", pid, sup.pid())
	}
	if !bytes.Equal(readFile(t, exe), readFile(t, v2)) || !bytes.Equal(readFile(t, exe+".previous"), v1) {
		t.Fatal("after the update the unit's binary is not the new build, or the old one was not kept")
	}

	// After the update, the unit's command is the new version: a kill and a
	// control-plane restart again.
	survivesKill("1.1.0")
	survivesRestart("1.1.0")
}

// waitAgentVersion waits for agent id of workspace default to be online at
// version v.
func waitAgentVersion(t *testing.T, cp *controlPlane, id, v string) {
	t.Helper()
	waitFor(t, statusTimeout*2, "agent "+id+" online at "+v, func() error {
		a, err := cp.cl.GetAgent(ctx(t), "default", id)
		if err != nil {
			return err
		}
		if a.Status != "online" || a.Version != v {
			return fmt.Errorf("%s at %s", a.Status, a.Version)
		}
		return nil
	})
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

// output is what the current process printed.
func (s *supervisor) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current.output()
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
