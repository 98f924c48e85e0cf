package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpPrintsCommandsThatWork runs `outpost up` as a fresh user would and
// runs every command its welcome text says to paste: the session commands
// swap between the local agent and the cloud pool agent, and each `exec
// --session` answers from the directory of the backend just swapped to.
// A second `up` with the same state finds the session and its commands
// still work.
func TestUpPrintsCommandsThatWork(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "OUTPOST_ADMIN_TOKEN="}
	for run := 1; run <= 2; run++ {
		p, out := runUp(t, env, dir)
		export, cmds := pasteable(out)
		if export == "" || len(cmds) < 2 {
			t.Fatalf("welcome has no export line or too few commands:\n%s", out)
		}
		roots := servedRoots(out)
		if roots["local"] != dir || roots["cloud-1"] == "" || roots["cloud-1"] == dir {
			t.Fatalf("run %d: agents serve %v; want local serving %s and cloud-1 its own directory:\n%s", run, roots, dir, out)
		}
		if hasCreate := strings.Contains(out, "session create demo"); hasCreate != (run == 1) {
			t.Fatalf("run %d: welcome prints session create: %v; want it only while the session does not exist:\n%s", run, hasCreate, out)
		}
		active := roots["local"] // the session starts, and each run ends, on laptop
		for _, c := range cmds {
			got := paste(t, env, export, c)
			switch {
			case strings.Contains(c, "session swap demo cloud"):
				active = roots["cloud-1"]
			case strings.Contains(c, "session swap demo laptop"):
				active = roots["local"]
			case strings.Contains(c, "exec --session demo -- pwd"):
				if strings.TrimSpace(got) != active {
					t.Fatalf("run %d: %q printed %q, want %q (the active backend's directory)", run, c, got, active)
				}
			case strings.Contains(c, "/sessions/demo/exec"):
				if !strings.Contains(got, "Outpost-Backend: cloud") || !strings.Contains(got, active) {
					t.Fatalf("run %d: %q printed\n%s\nwant Outpost-Backend: cloud and %s", run, c, got, active)
				}
			}
		}
		if active != roots["local"] {
			t.Fatalf("run %d: the pasted commands leave the session on %s, want laptop", run, active)
		}
		p.stop()
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("run %d: outpost up exited %d after SIGTERM:\n%s", run, code, p.output())
		}
	}
}

// paste runs one pasted command line after the export line, as a shell
// would, and returns what it printed; it must succeed and print something.
func paste(t *testing.T, env []string, export, c string) string {
	t.Helper()
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
	return string(got)
}

// servedRoots maps each agent of up's welcome to the directory it serves.
func servedRoots(out string) map[string]string {
	roots := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[0] == "agent" && f[len(f)-2] == "serving" {
			roots[f[1]] = f[len(f)-1]
		}
	}
	return roots
}

// runUp starts `outpost up` serving dir and waits for its welcome.
func runUp(t *testing.T, env []string, dir string) (*proc, string) {
	t.Helper()
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
	return p, out
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
