package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServeAdminToken: `outpost serve` prints a generated admin token on
// the start that generates it, and only then (later starts say where it
// is); it refuses a state dir others may enter and an admin token shorter
// than 32 characters, saying what to do.
func TestServeAdminToken(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state") // made by serve
	port := freePort(t)
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	args := []string{"serve", "--listen", "127.0.0.1:" + strconv.Itoa(port),
		"--nats-listen", "127.0.0.1:" + strconv.Itoa(freePort(t)), "--state-dir", stateDir}
	noEnvToken := []string{"OUTPOST_ADMIN_TOKEN="}
	tokenFile := filepath.Join(stateDir, "admin-token")

	// serveOnce starts serve, waits until it says where its token is and
	// stops it; it returns what serve printed.
	serveOnce := func() string {
		p := startProc(t, noEnvToken, args...)
		waitHealthy(t, p, url, startTimeout)
		waitFor(t, statusTimeout, "serve's admin token line", func() error {
			if !strings.Contains(p.output(), "admin token") {
				return fmt.Errorf("not yet:\n%s", p.output())
			}
			return nil
		})
		p.stop()
		return p.output()
	}

	first := serveOnce()
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 32 || !strings.Contains(first, tok) {
		t.Fatalf("first start does not print the generated token %q:\n%s", tok, first)
	}
	second := serveOnce()
	if strings.Contains(second, tok) || !strings.Contains(second, tokenFile) {
		t.Fatalf("second start prints the token again, or not where it is:\n%s", second)
	}

	refused := func(env []string, want string) {
		t.Helper()
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(c, outpostBin, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Fatalf("serve: %v\n%s\nwant a refusal saying %q", err, out, want)
		}
	}
	if err := os.Chmod(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	refused(noEnvToken, "chmod 700 "+stateDir)
	if err := os.Chmod(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	refused([]string{"OUTPOST_ADMIN_TOKEN=" + strings.Repeat("x", 31)}, "at least 32")
	if err := os.Chmod(tokenFile, 0o644); err != nil {
		t.Fatal(err)
	}
	refused(noEnvToken, "chmod 600 "+tokenFile)
}
