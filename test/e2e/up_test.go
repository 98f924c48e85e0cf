package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpPrintsCommandsThatWork runs `outpost up` as a fresh user would and
// runs every command its welcome text says to paste.
func TestUpPrintsCommandsThatWork(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "OUTPOST_ADMIN_TOKEN="}
	p := startProc(t, env, "up", "--dir", dir,
		"--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--nats-listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	var out string
	waitFor(t, startTimeout, "outpost up's welcome", func() error {
		select {
		case <-p.done:
			return errStop{fmt.Errorf("outpost up exited:\n%s", p.output())}
		default:
		}
		out = p.output()
		if !strings.Contains(out, "Ctrl-C stops everything.") {
			return fmt.Errorf("not yet:\n%s", out)
		}
		return nil
	})
	export, cmds := pasteable(out)
	if export == "" || len(cmds) < 2 {
		t.Fatalf("welcome has no export line or too few commands:\n%s", out)
	}
	for _, c := range cmds {
		line := strings.ReplaceAll(c, "go run ./cmd/outpost", outpostBin)
		sh := exec.Command("sh", "-c", export+"\n"+line)
		sh.Env = append(sh.Environ(), env...)
		got, err := sh.CombinedOutput()
		if err != nil {
			t.Fatalf("pasted %q: %v\n%s", c, err, got)
		}
		if len(strings.TrimSpace(string(got))) == 0 {
			t.Fatalf("pasted %q printed nothing", c)
		}
		t.Logf("%s\n%s", c, got)
	}
	p.stop()
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("outpost up exited %d after SIGTERM:\n%s", code, p.output())
	}
}

// pasteable returns the export line and the command lines of up's welcome.
func pasteable(out string) (export string, cmds []string) {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "export "):
			export = l
		case export != "" && (strings.HasPrefix(l, "go run ") || strings.HasPrefix(l, "curl ") || strings.HasPrefix(l, "outpost ")):
			cmds = append(cmds, l)
		}
	}
	return export, cmds
}
