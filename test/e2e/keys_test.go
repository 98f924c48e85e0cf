package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// cli runs the outpost binary against cp as the holder of token, in
// workspace ws, and returns its combined output.
func cli(t *testing.T, cp *controlPlane, token, ws string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(outpostBin, args...)
	cmd.Env = append(os.Environ(), "OUTPOST_URL="+cp.url, "OUTPOST_TOKEN="+token, "OUTPOST_WORKSPACE="+ws)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustCLI is cli that fails the test unless the command succeeds.
func mustCLI(t *testing.T, cp *controlPlane, token, ws string, args ...string) string {
	t.Helper()
	out, err := cli(t, cp, token, ws, args...)
	if err != nil {
		t.Fatalf("outpost %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestTokenKeyAndAgentCommands drives `outpost token`, `outpost key` and
// `outpost agents rm` as an operator would: every secret is printed once,
// by the command that makes it, listings show ids only, and what rm
// removes stops working.
func TestTokenKeyAndAgentCommands(t *testing.T) {
	cp := startControlPlane(t)
	ws := cp.workspace("w1")

	t.Run("enrollment tokens", func(t *testing.T) {
		var tok client.EnrollmentToken
		if err := json.Unmarshal([]byte(mustCLI(t, cp, adminToken, ws, "token", "create", "--agent", "a1", "--ttl", "10m", "--json")), &tok); err != nil || tok.ID == "" || tok.Token == "" {
			t.Fatalf("token create --json: %+v, %v", tok, err)
		}
		if until := time.Until(tok.ExpiresAt); until < 9*time.Minute || until > 11*time.Minute {
			t.Fatalf("--ttl 10m: expires in %s", until)
		}
		human := mustCLI(t, cp, adminToken, ws, "token", "create", "--pool", "cloud")
		if !strings.Contains(human, "opt_") || !strings.Contains(human, "tok_") {
			t.Fatalf("token create prints no token or id:\n%s", human)
		}
		ls := mustCLI(t, cp, adminToken, ws, "token", "ls")
		if !strings.Contains(ls, tok.ID) || !strings.Contains(ls, "a1") || !strings.Contains(ls, "cloud") || strings.Contains(ls, "opt_") {
			t.Fatalf("token ls lacks %s (agent a1) and the pool's, or shows a secret:\n%s", tok.ID, ls)
		}
		var list client.EnrollmentTokenList
		if err := json.Unmarshal([]byte(mustCLI(t, cp, adminToken, ws, "token", "ls", "--json")), &list); err != nil || len(list.Tokens) != 2 {
			t.Fatalf("token ls --json: %+v, %v", list, err)
		}

		if out := mustCLI(t, cp, adminToken, ws, "token", "rm", tok.ID); !strings.Contains(out, tok.ID) {
			t.Fatalf("token rm says %q", out)
		}
		cfg := filepath.Join(t.TempDir(), "a1.json")
		out, err := exec.Command(outpostBin, "agent", "enroll", "--url", cp.url, "--token", tok.Token, "--config", cfg).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "unauthenticated") {
			t.Fatalf("enroll with a deleted token: %v\n%s\nwant unauthenticated", err, out)
		}
		if out, err := cli(t, cp, adminToken, ws, "token", "rm", tok.ID); err == nil || !strings.Contains(out, "not_found") {
			t.Fatalf("token rm again: %v\n%s\nwant not_found", err, out)
		}
	})

	t.Run("workspace keys", func(t *testing.T) {
		var key client.Key
		if err := json.Unmarshal([]byte(mustCLI(t, cp, adminToken, ws, "key", "create", "--json")), &key); err != nil || key.ID == "" || key.Token == "" {
			t.Fatalf("key create --json: %+v, %v", key, err)
		}
		mustCLI(t, cp, key.Token, ws, "agents") // the key works
		ls := mustCLI(t, cp, adminToken, ws, "key", "ls")
		if !strings.Contains(ls, key.ID) || strings.Contains(ls, key.Token) {
			t.Fatalf("key ls lacks %s or shows its token:\n%s", key.ID, ls)
		}
		if out, err := cli(t, cp, key.Token, ws, "key", "ls"); err == nil || !strings.Contains(out, "permission_denied") {
			t.Fatalf("key ls with a workspace key: %v\n%s\nwant permission_denied", err, out)
		}
		mustCLI(t, cp, adminToken, ws, "key", "rm", key.ID)
		if out, err := cli(t, cp, key.Token, ws, "agents"); err == nil || !strings.Contains(out, "unauthenticated") {
			t.Fatalf("a deleted key: %v\n%s\nwant unauthenticated", err, out)
		}
	})

	t.Run("agents rm", func(t *testing.T) {
		cfg := cp.enroll(ws, "a2", "")
		agent := startAgent(t, cfg, t.TempDir())
		cp.waitStatus(ws, "a2", "online")
		var list client.AgentList
		if err := json.Unmarshal([]byte(mustCLI(t, cp, adminToken, ws, "agents", "--json")), &list); err != nil || len(list.Agents) != 1 || list.Agents[0].ID != "a2" {
			t.Fatalf("agents --json: %+v, %v", list, err)
		}
		if out := mustCLI(t, cp, adminToken, ws, "agents", "rm", "a2"); !strings.Contains(out, "a2") {
			t.Fatalf("agents rm says %q", out)
		}
		if _, err := cp.cl.GetAgent(ctx(t), ws, "a2"); !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("revoked agent: %v, want 404", err)
		}
		select {
		case <-agent.proc.done:
		case <-time.After(15 * time.Second):
			t.Fatalf("revoked daemon still running; output:\n%s", agent.proc.output())
		}
		if out := mustCLI(t, cp, adminToken, ws, "agents", "ls"); strings.Contains(out, "a2") {
			t.Fatalf("agents ls after rm:\n%s", out)
		}
	})
}
