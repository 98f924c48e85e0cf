package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// userCodeLine is how `outpost agent login` shows the code to approve.
var userCodeLine = regexp.MustCompile(`outpost agent approve ([A-Z2-9]{4}-[A-Z2-9]{4})`)

// A fresh machine (a network namespace whose only link is a veth to the
// control plane's host) logs in by device code over TLS, trusting the
// control plane's self-signed CA on first use; an admin sees its host name
// and OS and approves; the agent then runs and serves commands. A second
// login is denied and says so.
func TestDeviceLoginAcrossALink(t *testing.T) {
	l := newNetLink(t)
	cp := startControlPlaneWith(t, cpConfig{natsHost: l.hostIP, tls: true})
	cp.workspace("default")
	env := []string{"OUTPOST_URL=" + cp.url, "OUTPOST_TOKEN=" + adminToken, "OUTPOST_CA_FILE=" + cp.caFile()}
	home := t.TempDir()
	login := startCommand(t, []string{"HOME=" + home}, l.command(outpostBin, "agent", "login", "--url", cp.url, "--root", "/srv/work"))
	var code string
	waitFor(t, startTimeout, "the user code", func() error {
		m := userCodeLine.FindStringSubmatch(login.output())
		if m == nil {
			return errStatus("no code yet")
		}
		code = m[1]
		return nil
	})
	caSHA := caFingerprint(t, cp.caFile())
	if out := login.output(); !strings.Contains(out, caSHA) || !strings.Contains(out, cp.url+"/device?code="+code) {
		t.Fatalf("login does not show the CA fingerprint %s and the verification URL:\n%s", caSHA, out)
	}

	host, _ := os.Hostname() // the namespace shares the host's UTS namespace
	out := mustRunWithEnv(t, env, "agent", "approve", code, "--agent", "laptop")
	for _, want := range []string{"host:     " + host, "system:   linux/", caSHA, "approved: it enrolls as agent laptop of workspace default"} {
		if !strings.Contains(out, want) {
			t.Fatalf("outpost agent approve does not show %q:\n%s", want, out)
		}
	}
	select {
	case <-login.done:
	case <-ctx(t).Done():
		t.Fatal("login did not finish")
	}
	if login.cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("login failed:\n%s", login.output())
	}
	config := filepath.Join(home, ".outpost", "agent.json")
	if fi, err := os.Stat(config); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config %s: %v, %v", config, fi, err)
	}
	if want := "outpost agent install --config " + config + " --root /srv/work"; !strings.Contains(login.output(), want) {
		t.Fatalf("login does not say what to run next (%q):\n%s", want, login.output())
	}
	startCommand(t, nil, l.command(outpostBin, "agent", "run", "--config", config, "--root", t.TempDir()))
	cp.waitStatus("default", "laptop", "online")
	if out := mustRunWithEnv(t, env, "exec", "--agent", "laptop", "--", "echo", "logged-in"); strings.TrimSpace(out) != "logged-in" {
		t.Fatalf("exec: %q", out)
	}

	// Denied: the login ends with an error that says so, and writes nothing.
	other := filepath.Join(t.TempDir(), "other.json")
	login2 := startCommand(t, nil, l.command(outpostBin, "agent", "login", "--url", cp.url, "--config", other))
	waitFor(t, startTimeout, "the second user code", func() error {
		m := userCodeLine.FindStringSubmatch(login2.output())
		if m == nil {
			return errStatus("no code yet")
		}
		code = m[1]
		return nil
	})
	mustRunWithEnv(t, env, "agent", "deny", code)
	<-login2.done
	if login2.cmd.ProcessState.ExitCode() != 1 || !strings.Contains(login2.output(), "denied") {
		t.Fatalf("denied login: exit %d\n%s", login2.cmd.ProcessState.ExitCode(), login2.output())
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("a denied login wrote its config: %v", err)
	}
}

// deviceLogin runs `bin agent login` in l's namespace with HOME home,
// approves its code as agent id, and waits for it to write its config.
func deviceLogin(t *testing.T, l *netLink, cp *controlPlane, bin, home, id string) string {
	t.Helper()
	login := startCommand(t, []string{"HOME=" + home}, l.command(bin, "agent", "login", "--url", cp.url))
	var code string
	waitFor(t, startTimeout, "the user code", func() error {
		m := userCodeLine.FindStringSubmatch(login.output())
		if m == nil {
			return errStatus("no code yet")
		}
		code = m[1]
		return nil
	})
	env := []string{"OUTPOST_URL=" + cp.url, "OUTPOST_TOKEN=" + adminToken, "OUTPOST_CA_FILE=" + cp.caFile()}
	mustRunWithEnv(t, env, "agent", "approve", code, "--agent", id)
	select {
	case <-login.done:
	case <-ctx(t).Done():
		t.Fatal("login did not finish")
	}
	if login.cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("login failed:\n%s", login.output())
	}
	return filepath.Join(home, ".outpost", "agent.json")
}

// caFingerprint is the hex SHA-256 of the CA certificate in file.
func caFingerprint(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatalf("%s: no PEM", file)
	}
	sum := sha256.Sum256(b.Bytes)
	return hex.EncodeToString(sum[:])
}
