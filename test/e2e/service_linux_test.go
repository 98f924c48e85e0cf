package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// On a fresh machine (a network namespace), `agent login` then `agent
// install` gives an agent, run by a real systemd user manager, that
// survives a kill and a control-plane restart, a signed self-update to a
// second real build, and after the update a kill and a restart again;
// `agent uninstall` stops and removes it.
//
// The binary is a release build (-tags agent, version 1.0.0, the release
// key built in) put where a user would put it; the update is to 1.1.0,
// published signed and served by the control plane.
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

	sd := startUserSystemd(t, l, home)
	const unit = "outpost-agent-default-laptop.service"
	install := []string{"agent", "install", "--config", config, "--root", root, "--update-check", "1s"}
	dry := mustRunCommand(t, sd.env, exe, append(install, "--dry-run")...)
	out := mustRunCommand(t, sd.env, exe, install...)
	unitFile := filepath.Join(home, ".config", "systemd", "user", unit)
	if !strings.Contains(out, "wrote "+unitFile) || !strings.Contains(out, "started "+unit) {
		t.Fatalf("agent install says:\n%s", out)
	}
	if written := string(readFile(t, unitFile)); !strings.HasSuffix(dry, written) || !strings.Contains(written, "Restart=always") {
		t.Fatalf("install wrote:\n%s\nbut --dry-run showed:\n%s", written, dry)
	}
	if got := sd.show(unit, "ExecStart"); !strings.Contains(got, "argv[]="+exe+" agent run --config "+config+" --root "+root+" --update-check 1s ;") {
		t.Fatalf("systemd runs %s", got)
	}

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
	if inNS, want := netnsOf(t, fmt.Sprint(sd.mainPID(unit))), netnsOf(t, "/run/netns/"+l.ns); inNS != want {
		t.Fatalf("the agent runs in network namespace %s, not the machine's %s", inNS, want)
	}

	survivesKill := func(version string) {
		t.Helper()
		first := sd.mainPID(unit)
		if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitFor(t, statusTimeout, "systemd to restart the agent", func() error {
			if p := sd.mainPID(unit); p == first || p == 0 {
				return errStatus("not restarted")
			}
			return nil
		})
		serves(version, "after-kill-"+version)
	}
	survivesRestart := func(version string) {
		t.Helper()
		pid := sd.mainPID(unit)
		cp.restart()
		cp.waitStatus("default", "laptop", "online")
		serves(version, "after-restart-"+version)
		if p := sd.mainPID(unit); p != pid {
			t.Fatalf("the agent was restarted (pid %d, then %d) instead of reconnecting", pid, p)
		}
	}

	// A kill: systemd starts it again. A control-plane restart: the same
	// daemon reconnects by itself.
	survivesKill("1.0.0")
	survivesRestart("1.0.0")

	// An update: published while it runs, taken at its next check, tried
	// and kept. The same process re-executes as the new version: systemd
	// never sees it stop.
	pid, newBuild := sd.mainPID(unit), readFile(t, v2)
	mustRunWithEnv(t, nil, "release", "publish", "--key", key, "--dir", releases, "--version", "1.1.0", goPlatform(t)+"="+v2)
	waitFor(t, statusTimeout*2, "the update's trial to pass and the agent to re-execute", func() error {
		// The trial (a child, running the staged download) serves too,
		// briefly: the handoff is over when the new build is in place and
		// the unit's process has re-executed it (before, its exe is the
		// replaced file) with no trial left.
		if !bytes.Equal(readFile(t, exe), newBuild) {
			return errStatus("the new build is not in place")
		}
		if p := sd.mainPID(unit); p != pid {
			return errStop{fmt.Errorf("the update restarted the agent through systemd (pid %d, then %d)", pid, p)}
		}
		if now, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || now != exe {
			return fmt.Errorf("pid %d runs %q (%v)", pid, now, err)
		}
		if c := childOf(t, pid); c != 0 {
			return fmt.Errorf("trial %d still runs", c)
		}
		return nil
	})
	serves("1.1.0", "updated")
	if !bytes.Equal(readFile(t, exe+".previous"), v1) {
		t.Fatal("after the update the old build was not kept")
	}

	// After the update, the unit's command is the new version: a kill and a
	// control-plane restart again.
	survivesKill("1.1.0")
	survivesRestart("1.1.0")

	// Removal: the service stops and its unit goes.
	last := sd.mainPID(unit)
	out = mustRunCommand(t, sd.env, exe, "agent", "uninstall", "--config", config)
	if !strings.Contains(out, "stopped and removed "+unitFile) {
		t.Fatalf("agent uninstall says:\n%s", out)
	}
	if _, err := os.Stat(unitFile); !os.IsNotExist(err) {
		t.Fatalf("the unit file is still there: %v", err)
	}
	waitFor(t, statusTimeout, "the agent to stop", func() error {
		if alive(last) {
			return errStatus("still runs")
		}
		return nil
	})
	cp.waitStatus("default", "laptop", "offline")
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

// userSystemd is a systemd user manager (`systemd --user`) of the machine
// a network namespace stands for.
type userSystemd struct {
	t    *testing.T
	proc *proc
	// env is what a user's shell has for systemctl --user to reach it.
	env []string
}

// startUserSystemd starts `systemd --user` for home in l's namespace, as
// the user's login (or lingering) would. systemd refuses to run as a user
// manager unless the machine was booted with systemd (/run/systemd/system
// exists), which this container was not: the manager gets a mount
// namespace of its own whose /run/systemd is an empty tmpfs with that
// directory, so nothing outside it changes. It is stopped at cleanup, which
// stops its units.
func startUserSystemd(t *testing.T, l *netLink, home string) *userSystemd {
	t.Helper()
	sdBin := "/lib/systemd/systemd"
	if _, err := os.Stat(sdBin); err != nil {
		t.Fatalf("no systemd here (%v): .ci/run installs it", err)
	}
	runtimeDir := filepath.Join(home, ".run")
	if err := os.Mkdir(runtimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + runtimeDir}
	// Into the namespace's network with nsenter, not `ip netns exec`,
	// which mounts a /sys of its own without the cgroup file systems
	// systemd needs.
	script := "mount --make-rprivate / && mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/system && exec nsenter --net=/run/netns/" + l.ns + " " + sdBin + " --user"
	sd := &userSystemd{t: t, env: env}
	sd.proc = startCommand(t, append(env, "SYSTEMD_LOG_TARGET=console"), exec.Command("unshare", "-m", "sh", "-c", script))
	t.Cleanup(func() {
		// SIGTERM: the manager stops its units, then exits.
		sd.proc.signal(syscall.SIGTERM)
		select {
		case <-sd.proc.done:
		case <-time.After(30 * time.Second):
			t.Errorf("systemd --user did not stop on SIGTERM")
		}
	})
	waitFor(t, startTimeout, "systemd --user to answer", func() error {
		if out, err := sd.systemctl("show-environment"); err != nil {
			return fmt.Errorf("%v: %s\n%s", err, out, sd.proc.output())
		}
		return nil
	})
	return sd
}

func (sd *userSystemd) systemctl(args ...string) (string, error) {
	cmd := exec.Command("systemctl", append([]string{"--user"}, args...)...)
	cmd.Env = append(os.Environ(), sd.env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// show is a property of unit.
func (sd *userSystemd) show(unit, prop string) string {
	sd.t.Helper()
	out, err := sd.systemctl("show", "-p", prop, "--value", unit)
	if err != nil {
		sd.t.Fatalf("systemctl --user show %s: %v\n%s", unit, err, out)
	}
	return strings.TrimSpace(out)
}

// mainPID is the unit's main process, 0 when none runs.
func (sd *userSystemd) mainPID(unit string) int {
	sd.t.Helper()
	p, err := strconv.Atoi(sd.show(unit, "MainPID"))
	if err != nil {
		sd.t.Fatal(err)
	}
	return p
}

// netnsOf is the network namespace of a pid, or of a namespace file.
func netnsOf(t *testing.T, pidOrFile string) string {
	t.Helper()
	path := pidOrFile
	if _, err := strconv.Atoi(pidOrFile); err == nil {
		path = "/proc/" + pidOrFile + "/ns/net"
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}
