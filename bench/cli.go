package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// sshPeerScripts start the loopback sshd baseline and print its ssh
// config; the first that exists is run (paths from the repository's
// root): the shared tool next to the repository, else the repository's
// copy of it (a clean clone elsewhere, CI's, has no ../shared).
var sshPeerScripts = []string{"../shared/tools/ssh-peer.sh", "scripts/ssh-peer.sh"}

// sshPeerScript is the first of sshPeerScripts that exists (the first
// when none does: the error names it).
func sshPeerScript() string {
	for _, p := range sshPeerScripts {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return sshPeerScripts[0]
}

var (
	sshOnce sync.Once
	sshCfg  string
	sshErr  error
)

// sshPeer is the ssh config of the loopback sshd (user bench, connection
// sharing on), started once per run; an error says why there is none.
func sshPeer(ctx context.Context) (string, error) {
	sshOnce.Do(func() {
		script := sshPeerScript()
		out, err := exec.CommandContext(ctx, "bash", script).Output()
		if err != nil {
			sshErr = fmt.Errorf("no sshd on loopback (%s: %v)", script, err)
			return
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		sshCfg = lines[len(lines)-1]
	})
	return sshCfg, sshErr
}

// benchCLI: `outpost exec -- true` from a shell, next to `ssh peer true`
// over a shared connection (ControlMaster), the way a user would reach a
// machine otherwise. Both start a client process per call.
func benchCLI(ctx context.Context, e *env) ([]row, error) {
	bin, err := outpostBinary(ctx)
	if err != nil {
		return nil, err
	}
	n := min(e.n, 100)
	env := append(os.Environ(), "OUTPOST_URL="+e.srv.URL(), "OUTPOST_TOKEN="+e.srv.AdminToken(), "OUTPOST_WORKSPACE="+e.ws)
	cli, err := measure(n, func() error {
		cmd := exec.CommandContext(ctx, bin, "exec", "--agent", e.id, "--", "true")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("outpost exec: %v: %s", err, out)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	name := "CLI `outpost exec -- true` p50 vs `ssh peer true` (ControlMaster)"
	cfg, err := sshPeer(ctx)
	if err != nil {
		return []row{{Name: name, Outpost: ms(cli.pct(50)), Baseline: "skipped: " + err.Error(), Ratio: "—"}}, nil
	}
	ssh, err := measure(n, func() error {
		if out, err := exec.CommandContext(ctx, "ssh", "-F", cfg, "peer", "true").CombinedOutput(); err != nil {
			return fmt.Errorf("ssh: %v: %s", err, out)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	speedup := float64(ssh.pct(50)) / float64(cli.pct(50))
	return []row{{Name: name, Outpost: ms(cli.pct(50)), Baseline: ms(ssh.pct(50)),
		Ratio: fmt.Sprintf("%.2fx faster", speedup), Goal: "≥ 4× faster", Met: yesNo(speedup >= 4)}}, nil
}
