package e2e

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/wire"
)

// agentEnv is one control plane with one running agent.
type agentEnv struct {
	cp     *controlPlane
	ws, id string
	root   string
	agent  *agentProc
	target *client.Target
}

func newAgentEnv(t *testing.T) *agentEnv {
	t.Helper()
	cp := startControlPlane(t)
	e := &agentEnv{cp: cp, ws: cp.workspace("w1"), id: "a1", root: t.TempDir()}
	cfg := cp.enroll(e.ws, e.id, "")
	e.agent = startAgent(t, cfg, e.root)
	cp.waitStatus(e.ws, e.id, "online")
	e.target = cp.cl.Agent(e.ws, e.id)
	return e
}

func TestExec(t *testing.T) {
	e := newAgentEnv(t)
	if err := os.Mkdir(filepath.Join(e.root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		req        client.ExecRequest
		wantExit   int
		wantStdout string
		wantStderr string
		timedOut   bool
		truncated  bool
	}{
		{"echo argv", client.ExecRequest{Argv: []string{"echo", "hello world"}}, 0, "hello world\n", "", false, false},
		{"shell command", client.ExecRequest{Command: "echo out; echo err >&2"}, 0, "out\n", "err\n", false, false},
		{"exit code", client.ExecRequest{Command: "exit 3"}, 3, "", "", false, false},
		{"stdin", client.ExecRequest{Argv: []string{"cat"}, Stdin: "from stdin"}, 0, "from stdin", "", false, false},
		{"env", client.ExecRequest{Command: "echo $GREETING", Env: map[string]string{"GREETING": "hi there"}}, 0, "hi there\n", "", false, false},
		{"cwd", client.ExecRequest{Argv: []string{"pwd"}, Cwd: "sub"}, 0, filepath.Join(e.root, "sub") + "\n", "", false, false},
		{"timeout", client.ExecRequest{Argv: []string{"sleep", "30"}, TimeoutMs: 300}, 124, "", "", true, false},
		{"cap", client.ExecRequest{Command: "printf '%02000d' 0", OutputCap: 1000}, 0, strings.Repeat("0", 1000), "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.target.Exec(ctx(t), tt.req)
			if err != nil {
				t.Fatalf("exec: %v", err)
			}
			if res.ExitCode != tt.wantExit || res.Stdout != tt.wantStdout || res.Stderr != tt.wantStderr ||
				res.TimedOut != tt.timedOut || res.Truncated != tt.truncated {
				t.Fatalf("got exit=%d stdout=%q stderr=%q timedOut=%v truncated=%v; want exit=%d stdout=%q stderr=%q timedOut=%v truncated=%v",
					res.ExitCode, res.Stdout, res.Stderr, res.TimedOut, res.Truncated,
					tt.wantExit, tt.wantStdout, tt.wantStderr, tt.timedOut, tt.truncated)
			}
		})
	}
	t.Run("executable not found", func(t *testing.T) {
		_, err := e.target.Exec(ctx(t), client.ExecRequest{Argv: []string{"no-such-program-xyz"}})
		if !errors.Is(err, &wire.Error{Code: wire.CodeNotFound, Reason: wire.ReasonExecutableNotFound}) {
			t.Fatalf("err = %v, want not_found/executable_not_found", err)
		}
	})
	t.Run("cwd outside root", func(t *testing.T) {
		_, err := e.target.Exec(ctx(t), client.ExecRequest{Argv: []string{"pwd"}, Cwd: "../.."})
		if !errors.Is(err, &wire.Error{Code: wire.CodePermissionDenied, Reason: wire.ReasonOutsideRoot}) {
			t.Fatalf("err = %v, want permission_denied/outside_root", err)
		}
	})
}

// TestTimeoutKillsWholeGroup: a command that spawns background children is
// killed whole on timeout, leaving no process behind.
func TestTimeoutKillsWholeGroup(t *testing.T) {
	e := newAgentEnv(t)
	res, err := e.target.Exec(ctx(t), client.ExecRequest{
		Command:   "sleep 60 & echo $! > bg.pid; (sleep 60; echo never) & echo $! > bg2.pid; sleep 60",
		TimeoutMs: 500,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 124 || !res.TimedOut {
		t.Fatalf("exit %d timedOut %v, want 124 true", res.ExitCode, res.TimedOut)
	}
	for _, f := range []string{"bg.pid", "bg2.pid"} {
		b, err := os.ReadFile(filepath.Join(e.root, f))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "background child "+f+" gone", func() error {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				return errors.New("still running")
			}
			return nil
		})
	}
}

// TestOfflineIsUnavailableNeverNotFound is the rule users depend on most.
func TestOfflineIsUnavailableNeverNotFound(t *testing.T) {
	e := newAgentEnv(t)
	echo := client.ExecRequest{Argv: []string{"echo", "ok"}, TimeoutMs: 60000}

	// A clean stop says goodbye: offline at once, exec 503.
	e.agent.stop()
	a, err := e.cp.cl.GetAgent(ctx(t), e.ws, e.id)
	if err != nil || a.Status != "offline" {
		t.Fatalf("after clean stop: status %v, err %v; want offline at once", a.Status, err)
	}
	assertUnavailable(t, e.target, echo)

	// Back: online, exec works.
	e.agent = startAgent(t, e.agent.config, e.root)
	e.cp.waitStatus(e.ws, e.id, "online")
	if res, err := e.target.Exec(ctx(t), echo); err != nil || res.Stdout != "ok\n" {
		t.Fatalf("exec after restart: %+v, %v", res, err)
	}

	// SIGKILL: no goodbye; calls answer 503 quickly, never 404, never hang.
	e.agent.kill()
	assertUnavailable(t, e.target, echo)
	a, err = e.cp.cl.GetAgent(ctx(t), e.ws, e.id)
	if err != nil {
		t.Fatalf("GET agent after SIGKILL: %v (want 200)", err)
	}

	e.agent = startAgent(t, e.agent.config, e.root)
	e.cp.waitStatus(e.ws, e.id, "online")
	if res, err := e.target.Exec(ctx(t), echo); err != nil || res.Stdout != "ok\n" {
		t.Fatalf("exec after SIGKILL and restart: %+v, %v", res, err)
	}
}

// assertUnavailable checks an exec answers 503 within a few seconds.
func assertUnavailable(t *testing.T, target *client.Target, req client.ExecRequest) {
	t.Helper()
	start := time.Now()
	_, err := target.Exec(ctx(t), req)
	took := time.Since(start)
	if !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("exec on a stopped agent: %v, want 503 unavailable", err)
	}
	var we *wire.Error
	if errors.As(err, &we); we.Reason != wire.ReasonAgentOffline && we.Reason != wire.ReasonAgentReconnecting {
		t.Fatalf("reason %q, want agent_offline or agent_reconnecting", we.Reason)
	}
	if took > 3*time.Second {
		t.Fatalf("503 took %v; an offline agent must be answered in a second or two", took)
	}
}

func TestCredentialsAreScoped(t *testing.T) {
	cp := startControlPlane(t)
	ws := cp.workspace("w1")
	cfgPath := cp.enroll(ws, "a1", "")
	cp.enroll(ws, "a2", "")
	cfg, err := enroll.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	natsURL := "nats://127.0.0.1:" + strconv.Itoa(cp.natsPort)
	violations := make(chan error, 16)
	opts := append(cfg.NATSOptions(), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case violations <- err:
		default:
		}
	}))
	nc, err := nats.Connect(natsURL, opts...)
	if err != nil {
		t.Fatalf("a1 creds do not connect: %v", err)
	}
	defer nc.Close()

	refused := func(what string, act func() error) {
		t.Helper()
		if err := act(); err != nil {
			return // refused synchronously
		}
		nc.Flush()
		select {
		case err := <-violations:
			if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
				t.Fatalf("%s: unexpected error %v", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s was not refused", what)
		}
	}
	refused("subscribe to a2's rpc", func() error { _, err := nc.SubscribeSync("agent.w1.a2.rpc"); return err })
	refused("subscribe to _INBOX.>", func() error { _, err := nc.SubscribeSync("_INBOX.>"); return err })
	refused("subscribe to agent.>", func() error { _, err := nc.SubscribeSync("agent.>"); return err })
	refused("publish to a2's rpc", func() error { return nc.Publish("agent.w1.a2.rpc", []byte("x")) })
	if _, err := nc.SubscribeSync("agent.w1.a1.rpc"); err != nil {
		t.Fatalf("own subject refused: %v", err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-violations:
		t.Fatalf("own subject refused: %v", err)
	case <-time.After(quietPeriod):
	}

	// Revocation: the live connection closes within 2 s; the creds no longer connect.
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	nc.SetDisconnectErrHandler(func(*nats.Conn, error) {})
	start := time.Now()
	if err := cp.cl.RevokeAgent(ctx(t), ws, "a1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "revoked connection gone", func() error {
		select {
		case <-closed:
			return nil
		default:
		}
		if !nc.IsConnected() {
			return nil
		}
		return errors.New("still connected")
	})
	t.Logf("revoked connection dropped after %v", time.Since(start))
	if nc2, err := nats.Connect(natsURL, append(cfg.NATSOptions(), nats.MaxReconnects(0))...); err == nil {
		nc2.Close()
		t.Fatal("revoked creds still connect")
	}
	if _, err := cp.cl.GetAgent(ctx(t), ws, "a1"); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("GET revoked agent: %v, want 404", err)
	}
	if _, err := cp.cl.Agent(ws, "a1").Exec(ctx(t), client.ExecRequest{Argv: []string{"true"}}); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("exec on revoked agent: %v, want 404", err)
	}
}

func TestEnrollmentTokens(t *testing.T) {
	cp := startControlPlane(t)
	ws := cp.workspace("w1")
	tok, err := cp.cl.CreateEnrollmentToken(ctx(t), ws, client.EnrollmentTokenRequest{Agent: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	enrollCLI := func(token string) (string, error) {
		cfg := filepath.Join(t.TempDir(), "agent.json")
		out, err := exec.Command(outpostBin, "agent", "enroll", "--url", cp.url, "--token", token, "--config", cfg).CombinedOutput()
		return string(out), err
	}
	if out, err := enrollCLI(tok.Token); err != nil {
		t.Fatalf("first use: %v\n%s", err, out)
	}
	if out, err := enrollCLI(tok.Token); err == nil || !strings.Contains(out, "unauthenticated") {
		t.Fatalf("second use of a token: err %v, output %q; want exit 1 with unauthenticated", err, out)
	}
	short, err := cp.cl.CreateEnrollmentToken(ctx(t), ws, client.EnrollmentTokenRequest{Agent: "a2", TTLSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // let the token expire
	if _, err := enroll.Enroll(ctx(t), cp.url, short.Token, ""); !errors.Is(err, wire.ErrUnauthenticated) {
		t.Fatalf("expired token: %v, want 401", err)
	}
	if _, err := enroll.Enroll(ctx(t), cp.url, "opt_unknown", ""); !errors.Is(err, wire.ErrUnauthenticated) {
		t.Fatalf("unknown token: %v, want 401", err)
	}
}

func TestWorkspaceKeyIsScoped(t *testing.T) {
	cp := startControlPlane(t)
	cp.workspace("w1")
	cp.workspace("w2")
	key, err := cp.cl.CreateKey(ctx(t), "w1")
	if err != nil {
		t.Fatal(err)
	}
	kc := client.New(cp.url, key)
	if _, err := kc.GetWorkspace(ctx(t), "w1"); err != nil {
		t.Fatalf("own workspace: %v", err)
	}
	for name, call := range map[string]func() error{
		"get other workspace": func() error { _, err := kc.GetWorkspace(ctx(t), "w2"); return err },
		"list other agents":   func() error { _, err := kc.ListAgents(ctx(t), "w2"); return err },
		"token in other": func() error {
			_, err := kc.CreateEnrollmentToken(ctx(t), "w2", client.EnrollmentTokenRequest{})
			return err
		},
		"exec in other": func() error {
			_, err := kc.Agent("w2", "a1").Exec(ctx(t), client.ExecRequest{Argv: []string{"true"}})
			return err
		},
		"admin: new workspace":  func() error { _, err := kc.CreateWorkspace(ctx(t), "w3"); return err },
		"admin: key for itself": func() error { _, err := kc.CreateKey(ctx(t), "w1"); return err },
	} {
		if err := call(); !errors.Is(err, wire.ErrPermissionDenied) {
			t.Errorf("%s: %v, want 403", name, err)
		}
	}
	req, _ := http.NewRequest("GET", cp.url+"/v1/workspaces/w1", nil)
	req.Header.Set("Authorization", "Bearer opk_wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad key: %d, want 401", resp.StatusCode)
	}
}

func TestControlPlaneRestart(t *testing.T) {
	e := newAgentEnv(t)
	key, err := e.cp.cl.CreateKey(ctx(t), e.ws)
	if err != nil {
		t.Fatal(err)
	}
	e.cp.restart()
	if _, err := e.cp.cl.GetWorkspace(ctx(t), e.ws); err != nil {
		t.Fatalf("workspace after restart: %v", err)
	}
	if _, err := client.New(e.cp.url, key).GetWorkspace(ctx(t), e.ws); err != nil {
		t.Fatalf("workspace key after restart: %v", err)
	}
	e.cp.waitStatus(e.ws, e.id, "online")
	res, err := e.target.Exec(ctx(t), client.ExecRequest{Argv: []string{"echo", "back"}})
	if err != nil || res.Stdout != "back\n" {
		t.Fatalf("exec after control-plane restart: %+v, %v", res, err)
	}
}

// TestRevokedDaemonStops: a revoked agent's daemon is disconnected, cannot
// come back, and exits telling the user to re-enroll instead of retrying
// forever.
func TestRevokedDaemonStops(t *testing.T) {
	e := newAgentEnv(t)
	if err := e.cp.cl.RevokeAgent(ctx(t), e.ws, e.id); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.agent.proc.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("revoked daemon still running; output:\n%s", e.agent.proc.output())
	}
	if code := e.agent.proc.cmd.ProcessState.ExitCode(); code == 0 {
		t.Fatalf("revoked daemon exited 0; output:\n%s", e.agent.proc.output())
	}
	if out := e.agent.proc.output(); !strings.Contains(out, "re-enroll") {
		t.Fatalf("revoked daemon did not say why; output:\n%s", out)
	}
}
