package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/tinyproxy"
)

// The binary honours HTTPS_PROXY, HTTP_PROXY and NO_PROXY, read from the
// environment as in production: its client commands, enrollment, and the
// agent's NATS connection (a CONNECT tunnel). net/http never proxies
// "localhost" or a loopback IP address, so the control plane and its NATS
// are named "127.1": the same address (tinyproxy's resolver reads it as
// 127.0.0.1), but not a spelling net/http takes for loopback.
func TestBinaryHonoursProxyEnvironment(t *testing.T) {
	p := tinyproxy.Start(t, tinyproxy.Options{})
	cp := &controlPlane{t: t, httpPort: freePort(t), natsPort: freePort(t), stateDir: privateDir(t)}
	cp.url = "http://127.0.0.1:" + strconv.Itoa(cp.httpPort)
	cp.cl = client.New(cp.url, adminToken)
	natsViaName := "127.1:" + strconv.Itoa(cp.natsPort)
	cp.proc = startProc(t, []string{"OUTPOST_ADMIN_TOKEN=" + adminToken}, "serve",
		"--listen", "127.0.0.1:"+strconv.Itoa(cp.httpPort),
		"--nats-listen", "127.0.0.1:"+strconv.Itoa(cp.natsPort),
		"--public-nats-url", "nats://"+natsViaName,
		"--state-dir", cp.stateDir)
	waitHealthy(t, cp.proc, cp.url, startTimeout)
	ws := cp.workspace("ws")
	viaName := "http://127.1:" + strconv.Itoa(cp.httpPort)
	viaProxy := []string{"HTTP_PROXY=" + p.URL.String(), "HTTPS_PROXY=" + p.URL.String(), "NO_PROXY=", "no_proxy=", "OUTPOST_TOKEN=" + adminToken}

	mustRunWithEnv(t, viaProxy, "agents", "--url", viaName, "--workspace", ws)
	if n := p.Count("GET", viaName+"/v1/workspaces/ws/agents"); n != 1 {
		t.Fatalf("tinyproxy logged %d GETs of the agents, want 1; requests %q", n, p.Requests())
	}

	tok, err := cp.cl.CreateEnrollmentToken(ctx(t), ws, client.EnrollmentTokenRequest{Agent: "laptop"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "laptop.json")
	mustRunWithEnv(t, viaProxy, "agent", "enroll", "--url", viaName, "--token", tok.Token, "--config", cfg)
	if n := p.Count("POST", viaName+"/v1/enroll"); n != 1 {
		t.Fatalf("tinyproxy logged %d enrollments, want 1; requests %q", n, p.Requests())
	}

	startProc(t, viaProxy, "agent", "run", "--config", cfg, "--root", t.TempDir())
	cp.waitStatus(ws, "laptop", "online")
	res, err := cp.cl.Agent(ws, "laptop").Exec(ctx(t), client.ExecRequest{Argv: []string{"echo", "via-the-proxy"}})
	if err != nil || res.Stdout != "via-the-proxy\n" {
		t.Fatalf("exec: %+v %v", res, err)
	}
	if n := p.Count("CONNECT", natsViaName); n != 1 {
		t.Fatalf("tinyproxy logged %d CONNECTs to %s, want the agent's one; requests %q", n, natsViaName, p.Requests())
	}

	// Around the proxy, the name goes to this machine's resolver, which may
	// not read "127.1" as an address (Go's does not): the command may fail,
	// but the proxy must see nothing.
	before := len(p.Requests())
	out, err := runWithEnv(append(viaProxy, "NO_PROXY=127.1"), "agents", "--url", viaName, "--workspace", ws)
	if got := p.Requests(); len(got) != before {
		t.Fatalf("with NO_PROXY=127.1 tinyproxy got %q, want nothing new", got[before:])
	}
	if err != nil && !strings.Contains(out, "127.1") {
		t.Fatalf("with NO_PROXY=127.1: %v\n%s", err, out)
	}
}

// mustRunWithEnv runs the binary with env added to an environment free of proxy
// variables, and fails the test if it fails.
func mustRunWithEnv(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, err := runWithEnv(env, args...)
	if err != nil {
		t.Fatalf("outpost %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// runWithEnv runs the binary with env added to an environment free of proxy
// variables.
func runWithEnv(env []string, args ...string) (string, error) {
	return runCommand(env, outpostBin, args...)
}

// mustRunCommand is mustRunWithEnv of another binary (an agent build).
func mustRunCommand(t *testing.T, env []string, bin string, args ...string) string {
	t.Helper()
	out, err := runCommand(env, bin, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return out
}

// runCommand runs bin as runWithEnv runs the outpost binary.
func runCommand(env []string, bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "REQUEST_METHOD":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
