package console_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/agent/audit"
	"github.com/outposthq/outpost/agent/control"
	"github.com/outposthq/outpost/agent/policy"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/outposttest"
	"github.com/outposthq/outpost/wire"
)

// ownedAgent runs a real agent "owned" under its owner's policy pol, with
// an audit log and its owner's control socket (the path returned, what
// `outpost agent pause` talks to), until the test ends.
func ownedAgent(t *testing.T, env *outposttest.Env, id, pol string) (*client.Target, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(file, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	pf, err := policy.Open(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	al, err := audit.Open(filepath.Join(dir, "audit.jsonl"), 0)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := env.Client.CreateEnrollmentToken(ctx, "", client.EnrollmentTokenRequest{Agent: id})
	if err != nil {
		t.Fatal(err)
	}
	ident, err := enroll.Enroll(ctx, env.Server.URL(), tok.Token, id)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	a, err := agent.New(agent.Config{Identity: ident, Root: t.TempDir(), HeartbeatInterval: time.Second, Policy: pf, Audit: al, ControlSocket: sock})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done; al.Close() })
	return env.Client.Agent("", id), sock
}

// TestConsolePolicyAndAudit: the agents page shows what the owner's policy
// narrows, and the audit page what the agent ran, allowed and denied.
func TestConsolePolicyAndAudit(t *testing.T) {
	env := outposttest.New(t, outposttest.Config{})
	owned, sock := ownedAgent(t, env, "owned", `{"fs": "read-only", "commands": ["echo"], "denyPaths": [".ssh"]}`)
	p := newPage(t)
	p.run("sign in", chromedp.Navigate(env.Server.URL()+"/"), chromedp.WaitVisible(`input[name="token"]`, chromedp.ByQuery),
		chromedp.SendKeys(`input[name="token"]`, env.Server.AdminToken()+kb.Enter, chromedp.ByQuery))
	p.waitText(`tr[data-agent="owned"] .status`, regexp.MustCompile(`^online$`))
	p.waitText(`tr[data-agent="owned"]`, regexp.MustCompile(`fs read-only; commands: echo; 1 denied path`))

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	pauseSteps(ctx, t, p, owned, sock)
	if r, err := owned.Exec(ctx, client.ExecRequest{Argv: []string{"echo", "audited-call"}}); err != nil || r.ExitCode != 0 {
		t.Fatalf("allowed exec: %+v %v", r, err)
	}
	if _, err := owned.Exec(ctx, client.ExecRequest{Argv: []string{"ls"}}); !errors.Is(err, wire.ErrPermissionDenied) {
		t.Fatalf("exec of ls under commands [echo]: %v, want permission_denied", err)
	}
	p.run("audit", chromedp.Click(`//nav//a[text()="Audit log"]`))
	waitUntil(t, "both calls in the audit page", func() (bool, string) {
		s := p.text(`main table`)
		if regexp.MustCompile(`owned\s+exec\s+echo audited-call\s+ok`).MatchString(s) &&
			regexp.MustCompile(`owned\s+exec\s+ls\s+permission_denied/policy`).MatchString(s) {
			return true, s
		}
		p.run("show again", chromedp.Click(`//button[text()="Show"]`))
		return false, s
	})
	p.checkClean()
}

// pauseSteps: the owner pauses the agent on its control socket (as
// `outpost agent pause` does); the agents page shows it paused while calls
// are refused, and online again after resume.
func pauseSteps(ctx context.Context, t *testing.T, p *page, owned *client.Target, sock string) {
	t.Helper()
	status := `tr[data-agent="owned"] .status`
	if st, err := control.Call(ctx, sock, "pause"); err != nil || !st.Paused {
		t.Fatalf("pause on the control socket: %+v, %v", st, err)
	}
	p.waitText(status, regexp.MustCompile(`^online, paused$`))
	var we *wire.Error
	if _, err := owned.List(ctx, ".", false); !errors.As(err, &we) || we.Code != wire.CodeUnavailable || we.Reason != wire.ReasonAgentPaused {
		t.Errorf("list while paused: %v, want unavailable/agent_paused", err)
	}
	var cls string
	if err := p.eval(`document.querySelector('tr[data-agent="owned"] .status').className`, &cls); err != nil || !strings.Contains(cls, "status-paused") {
		t.Errorf("paused status has class %q (%v), want status-paused", cls, err)
	}
	if st, err := control.Call(ctx, sock, "resume"); err != nil || st.Paused {
		t.Fatalf("resume on the control socket: %+v, %v", st, err)
	}
	p.waitText(status, regexp.MustCompile(`^online$`))
}
