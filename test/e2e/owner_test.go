package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// The owner's controls through the binary: agent run --policy, and agent
// status, pause, resume and audit on the agent's control socket; the
// policy file reloaded on SIGHUP.
func TestOwnerControlsOverBinary(t *testing.T) {
	cp := startControlPlane(t)
	ws, id, root := cp.workspace("w1"), "a1", t.TempDir()
	cfg := cp.enroll(ws, id, "")
	pol := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(pol, []byte(`{"exec": false}`), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(pol, 0o666)
	out, err := exec.Command(outpostBin, "agent", "run", "--config", cfg, "--root", root, "--policy", pol).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "writable by others") {
		t.Fatalf("agent run with a world-writable policy: %v %s, want a refusal", err, out)
	}
	os.Chmod(pol, 0o600)
	ag := &agentProc{proc: startProc(t, nil, "agent", "run", "--config", cfg, "--root", root, "--policy", pol), config: cfg, root: root}
	cp.waitStatus(ws, id, "online")
	target := cp.cl.Agent(ws, id)

	if _, err := target.Exec(ctx(t), client.ExecRequest{Argv: []string{"true"}}); !isReason(err, wire.ReasonPolicy) {
		t.Fatalf("exec under exec:false: %v, want policy", err)
	}
	if fi, err := os.Stat(cfg + ".sock"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket: %v %v, want mode 0600", fi, err)
	}

	ctl := func(args ...string) string {
		t.Helper()
		b, err := exec.Command(outpostBin, append([]string{"agent"}, append(args, "--config", cfg)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("outpost agent %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	if st := ctl("status"); !strings.Contains(st, "connected") || !strings.Contains(st, cp.url) || !strings.Contains(st, ws+"/"+id) {
		t.Fatalf("status:\n%s", st)
	}
	ctl("pause")
	if _, err := target.List(ctx(t), ".", false); !isReason(err, wire.ReasonAgentPaused) {
		t.Fatalf("list while paused: %v, want agent_paused", err)
	}
	var st struct{ Paused bool }
	if err := json.Unmarshal([]byte(ctl("status", "--json")), &st); err != nil || !st.Paused {
		t.Fatalf("status --json while paused: %+v %v", st, err)
	}
	a, err := cp.cl.GetAgent(ctx(t), ws, id)
	if err != nil || a.Status != "online" {
		t.Fatalf("paused agent: %+v %v, want online", a, err)
	}
	ctl("resume")
	if _, err := target.List(ctx(t), ".", false); err != nil {
		t.Fatalf("list after resume: %v", err)
	}

	// A changed policy, reloaded on SIGHUP.
	if err := os.WriteFile(pol, []byte(`{"exec": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ag.signal(syscall.SIGHUP)
	waitFor(t, statusTimeout, "exec allowed after the reload", func() error {
		_, err := target.Exec(ctx(t), client.ExecRequest{Argv: []string{"echo", "SECRET-ARG"}})
		return err
	})

	audit := ctl("audit")
	for _, want := range []string{`"op":"exec","argv":["true"],"result":"permission_denied/policy"`, `"op":"fs.list"`, `"result":"unavailable/agent_paused"`, `"argv":["echo","SECRET-ARG"]`} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit lacks %s:\n%s", want, audit)
		}
	}
	// audit -f keeps printing.
	follow := startProc(t, nil, "agent", "audit", "-f", "--config", cfg)
	target.Exec(ctx(t), client.ExecRequest{Argv: []string{"echo", "FOLLOWED"}})
	waitFor(t, statusTimeout, "audit -f shows the new event", func() error {
		if !strings.Contains(follow.output(), "FOLLOWED") {
			return errors.New("not yet")
		}
		return nil
	})
	follow.kill()

	ag.stop()
	if _, err := exec.Command(outpostBin, "agent", "status", "--config", cfg).CombinedOutput(); err == nil {
		t.Fatal("status of a stopped agent succeeded")
	}
}

// isReason reports whether err is a wire error with reason.
func isReason(err error, reason string) bool {
	var we *wire.Error
	return errors.As(err, &we) && we.Reason == reason
}

// outpost up's agents have the owner's controls of agent run: a control
// socket and an audit log beside each agent's config in the state dir
// (STATE/agent.json for the local agent), and up --policy puts the local
// agent under a policy file, reloaded on SIGHUP.
func TestUpOwnerControlsOverBinary(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "OUTPOST_ADMIN_TOKEN="}
	pol := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(pol, []byte(`{"exec": false}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, env, "up", "--dir", dir, "--policy", pol,
		"--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--nats-listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	waitFor(t, startTimeout, "outpost up's welcome", func() error {
		if !strings.Contains(p.output(), "Ctrl-C stops everything.") {
			return errors.New("not yet")
		}
		return nil
	})
	out := p.output()
	export, _ := pasteable(out)
	var url, token string
	for _, f := range strings.Fields(export) {
		if v, ok := strings.CutPrefix(f, "OUTPOST_URL="); ok {
			url = v
		}
		if v, ok := strings.CutPrefix(f, "OUTPOST_TOKEN="); ok {
			token = v
		}
	}
	cfg := filepath.Join(home, ".config", "outpost", "up", "agent.json")
	if !strings.Contains(out, "agent status --config "+cfg) || !strings.Contains(out, "agent audit --config "+cfg) {
		t.Fatalf("welcome does not show the owner's commands for %s:\n%s", cfg, out)
	}
	target := client.New(url, token).Agent("default", "local")
	ctl := func(config string, args ...string) string {
		t.Helper()
		cmd := exec.Command(outpostBin, append([]string{"agent"}, append(args, "--config", config)...)...)
		cmd.Env = append(os.Environ(), env...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("outpost agent %v --config %s: %v\n%s", args, config, err, b)
		}
		return string(b)
	}
	if st := ctl(cfg, "status"); !strings.Contains(st, "default/local") || !strings.Contains(st, "policy:        "+pol) || !strings.Contains(st, dir) {
		t.Fatalf("status of up's local agent:\n%s", st)
	}
	if _, err := target.Exec(ctx(t), client.ExecRequest{Argv: []string{"true"}}); !isReason(err, wire.ReasonPolicy) {
		t.Fatalf("exec on up's local agent under exec:false: %v, want policy", err)
	}
	ctl(cfg, "pause")
	if _, err := target.List(ctx(t), ".", false); !isReason(err, wire.ReasonAgentPaused) {
		t.Fatalf("list while paused: %v, want agent_paused", err)
	}
	// The pool agent is not paused: each agent has its own socket.
	pool := filepath.Join(home, ".config", "outpost", "up", "cloud-agent.json")
	if st := ctl(pool, "status"); !strings.Contains(st, "default/cloud-1") || strings.Contains(st, "PAUSED") {
		t.Fatalf("status of up's pool agent:\n%s", st)
	}
	ctl(cfg, "resume")
	if _, err := target.List(ctx(t), ".", false); err != nil {
		t.Fatalf("list after resume: %v", err)
	}
	if err := os.WriteFile(pol, []byte(`{"exec": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGHUP)
	waitFor(t, statusTimeout, "exec allowed after the reload", func() error {
		_, err := target.Exec(ctx(t), client.ExecRequest{Argv: []string{"echo", "UP-AUDITED"}})
		return err
	})
	audit := ctl(cfg, "audit")
	for _, want := range []string{`"op":"exec","argv":["true"],"result":"permission_denied/policy"`, `"result":"unavailable/agent_paused"`, `"op":"fs.list"`, `"argv":["echo","UP-AUDITED"]`} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit of up's local agent lacks %s:\n%s", want, audit)
		}
	}
	if fi, err := os.Stat(cfg + ".audit.jsonl"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log: %v %v, want mode 0600", fi, err)
	}
	p.stop()
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("outpost up exited %d:\n%s", code, p.output())
	}
	if _, err := os.Stat(cfg + ".sock"); err == nil {
		t.Error("the control socket is left after up stopped")
	}
}
