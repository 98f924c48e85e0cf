package controlplane

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/agent/audit"
	"github.com/outposthq/outpost/agent/control"
	"github.com/outposthq/outpost/agent/policy"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/wire"
)

// policyAgent enrolls id and runs a real agent on root under the policy
// file text pol; it returns the agent and its HTTP path prefix.
func policyAgent(t testing.TB, s *Server, id, root, pol string) (*agent.Agent, string) {
	t.Helper()
	a, prefix, _ := policyAgentAudited(t, s, id, root, pol)
	return a, prefix
}

// policyAgentAudited is policyAgent with an audit log, whose path it returns.
func policyAgentAudited(t testing.TB, s *Server, id, root, pol string) (*agent.Agent, string, string) {
	t.Helper()
	a, prefix, auditFile, _ := policyAgentFile(t, s, id, root, pol)
	return a, prefix, auditFile
}

// policyAgentFile is policyAgentAudited that also returns the policy file
// the agent holds, for a test to reload.
func policyAgentFile(t testing.TB, s *Server, id, root, pol string) (*agent.Agent, string, string, *policy.File) {
	t.Helper()
	if _, err := adminClient(s).CreateWorkspace(context.Background(), "ws1"); err != nil && !errors.Is(err, wire.ErrConflict) {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(file, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	pf, err := policy.Open(file, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	ta := enrollAgent(t, s, "ws1", id)
	ident := &enroll.Config{URL: s.URL(), Workspace: ta.ag.Workspace, Agent: ta.ag.ID, NATSURLs: ta.urls, JWT: ta.jwt, Seed: string(ta.seed)}
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	al, err := audit.Open(auditFile, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { al.Close() })
	a, err := agent.New(agent.Config{Identity: ident, Root: root, HeartbeatInterval: heartbeatEvery, Logger: testLogger(), Policy: pf, Audit: al})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitLong):
			t.Errorf("agent did not stop")
		}
	})
	waitFor(t, waitLong, "agent online", func() bool { return s.presence.Get(ident.AgentID()).Status == "online" })
	return a, "/v1/workspaces/ws1/agents/" + id, auditFile, pf
}

// policyCase is one call and what the owner's policy makes of it: denied
// by rule (403 policy naming it), or wantStatus.
type policyCase struct {
	name         string
	method, path string
	body         any
	rule         string // "" = allowed
	wantStatus   int    // when allowed
}

func runPolicyCases(t *testing.T, s *Server, prefix string, cases []policyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := call(t, s, tc.method, prefix+tc.path, s.AdminToken(), tc.body)
			if tc.rule == "" {
				if status != tc.wantStatus {
					t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, status, body, tc.wantStatus)
				}
				return
			}
			if status != http.StatusForbidden {
				t.Fatalf("%s %s: %d %s, want 403", tc.method, tc.path, status, body)
			}
			code, reason := errorCode(t, body)
			if code != wire.CodePermissionDenied || reason != wire.ReasonPolicy || !strings.Contains(string(body), `rule \"`+tc.rule+`\"`) {
				t.Fatalf("%s %s: %s, want permission_denied/policy naming rule %q", tc.method, tc.path, body, tc.rule)
			}
		})
	}
}

func q(path string, kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return path + "?" + v.Encode()
}

func TestPolicyExecAndProcessesSwitchedOff(t *testing.T) {
	s := startServer(t, testConfig(t))
	_, prefix := policyAgent(t, s, "noexec", t.TempDir(), `{"exec": false, "processes": false}`)
	_, ttyPrefix := policyAgent(t, s, "notty", t.TempDir(), `{"tty": false}`)
	runPolicyCases(t, s, prefix, []policyCase{
		{name: "exec", method: "POST", path: "/exec", body: map[string]any{"argv": []string{"true"}}, rule: "exec"},
		{name: "exec shell text", method: "POST", path: "/exec", body: map[string]any{"command": "true"}, rule: "exec"},
		{name: "start process", method: "POST", path: "/processes", body: map[string]any{"argv": []string{"sleep", "5"}}, rule: "processes"},
		{name: "list processes", method: "GET", path: "/processes", rule: "processes"},
		{name: "files still served", method: "GET", path: q("/fs/list", "path", "."), wantStatus: 200},
	})
	runPolicyCases(t, s, ttyPrefix, []policyCase{
		{name: "process with a tty", method: "POST", path: "/processes", body: map[string]any{"argv": []string{"sleep", "5"}, "tty": true}, rule: "tty"},
		{name: "exec without", method: "POST", path: "/exec", body: map[string]any{"argv": []string{"true"}}, wantStatus: 200},
	})
}

func TestPolicyCommandsAllowList(t *testing.T) {
	s := startServer(t, testConfig(t))
	root := t.TempDir()
	// An executable named like an allowed command, written into the root.
	if err := os.WriteFile(filepath.Join(root, "echo"), []byte("#!/bin/sh\necho fake\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, prefix := policyAgent(t, s, "cmds", root, `{"commands": ["echo", "git"]}`)
	_, shPrefix := policyAgent(t, s, "cmdsh", t.TempDir(), `{"commands": ["echo", "sh"]}`)
	ex := func(argv ...string) map[string]any { return map[string]any{"argv": argv} }
	runPolicyCases(t, s, prefix, []policyCase{
		{name: "allowed", method: "POST", path: "/exec", body: ex("echo", "hi"), wantStatus: 200},
		{name: "not listed", method: "POST", path: "/exec", body: ex("cat", "/etc/hostname"), rule: "commands"},
		{name: "shell text needs sh", method: "POST", path: "/exec", body: map[string]any{"command": "echo hi"}, rule: "commands"},
		{name: "sh -c", method: "POST", path: "/exec", body: ex("sh", "-c", "cat /etc/hostname"), rule: "commands"},
		{name: "bash -c", method: "POST", path: "/exec", body: ex("bash", "-c", "echo hi"), rule: "commands"},
		{name: "absolute path of an allowed name", method: "POST", path: "/exec", body: ex("/bin/echo", "hi"), rule: "commands"},
		{name: "relative path to a lookalike in the root", method: "POST", path: "/exec", body: ex("./echo"), rule: "commands"},
		{name: "env wrapper", method: "POST", path: "/exec", body: ex("env", "cat", "/etc/hostname"), rule: "commands"},
		{name: "PATH pointed at the root", method: "POST", path: "/exec", body: map[string]any{"argv": []string{"echo"}, "env": map[string]string{"PATH": root}}, rule: "commands"},
		{name: "LD_PRELOAD", method: "POST", path: "/exec", body: map[string]any{"argv": []string{"echo"}, "env": map[string]string{"LD_PRELOAD": "x.so"}}, rule: "commands"},
		{name: "process not listed", method: "POST", path: "/processes", body: ex("sleep", "5"), rule: "commands"},
		{name: "process shell text", method: "POST", path: "/processes", body: map[string]any{"command": "sleep 5"}, rule: "commands"},
	})
	runPolicyCases(t, s, shPrefix, []policyCase{
		{name: "shell text with sh allowed", method: "POST", path: "/exec", body: map[string]any{"command": "echo hi"}, wantStatus: 200},
		{name: "sh by name", method: "POST", path: "/exec", body: ex("sh", "-c", "echo hi"), wantStatus: 200},
		{name: "/bin/sh by path", method: "POST", path: "/exec", body: ex("/bin/sh", "-c", "echo hi"), rule: "commands"},
	})
	// The allowed call really ran the machine's echo, not the lookalike.
	_, body := call(t, s, "POST", prefix+"/exec", s.AdminToken(), ex("echo", "real"))
	if !strings.Contains(string(body), `"stdout":"real\n"`) {
		t.Fatalf("allowed exec: %s", body)
	}
}

func TestPolicyReadOnlyFiles(t *testing.T) {
	s := startServer(t, testConfig(t))
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("keep"), 0o644)
	os.Mkdir(filepath.Join(root, "dir"), 0o755)
	_, prefix := policyAgent(t, s, "rofs", root, `{"fs": "read-only", "git": "read-only"}`)
	gitInit(t, root)
	runPolicyCases(t, s, prefix, []policyCase{
		{name: "put file", method: "PUT", path: q("/fs/file", "path", "b.txt"), body: "new", rule: "fs"},
		{name: "overwrite file", method: "PUT", path: q("/fs/file", "path", "a.txt", "overwrite", "true"), body: "new", rule: "fs"},
		{name: "mkdir", method: "POST", path: "/fs/mkdir", body: map[string]any{"path": "d2"}, rule: "fs"},
		{name: "move", method: "POST", path: "/fs/move", body: map[string]any{"from": "a.txt", "to": "c.txt"}, rule: "fs"},
		{name: "remove", method: "DELETE", path: q("/fs", "path", "a.txt"), rule: "fs"},
		{name: "remove dir", method: "DELETE", path: q("/fs", "path", "dir", "recursive", "true"), rule: "fs"},
		{name: "put archive", method: "PUT", path: q("/fs/archive", "path", "dir"), body: tarOf(t, [2]string{"x.txt", "x"}), rule: "fs"},
		{name: "git add", method: "POST", path: "/git/add", body: map[string]any{"all": true}, rule: "git"},
		{name: "git commit", method: "POST", path: "/git/commit", body: map[string]any{"message": "m", "all": true}, rule: "git"},
		{name: "git branch", method: "POST", path: "/git/branches", body: map[string]any{"name": "b"}, rule: "git"},
		{name: "read file", method: "GET", path: q("/fs/file", "path", "a.txt"), wantStatus: 200},
		{name: "list", method: "GET", path: q("/fs/list", "path", "."), wantStatus: 200},
		{name: "stat", method: "GET", path: q("/fs/stat", "path", "dir"), wantStatus: 200},
		{name: "search", method: "GET", path: q("/fs/search", "path", ".", "query", "keep"), wantStatus: 200},
		{name: "archive get", method: "GET", path: q("/fs/archive", "path", "."), wantStatus: 200},
		{name: "git status", method: "GET", path: "/git/status", wantStatus: 200},
	})
	got, _ := os.ReadFile(filepath.Join(root, "a.txt"))
	if string(got) != "keep" {
		t.Fatalf("a.txt is %q after the denied writes", got)
	}
	for _, n := range []string{"b.txt", "c.txt", "d2", "dir/x.txt"} {
		if _, err := os.Lstat(filepath.Join(root, n)); err == nil {
			t.Errorf("%s exists after a denied write", n)
		}
	}
}

func gitInit(t testing.TB, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

func gitRun(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}

func gitOut(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

func TestPolicyDenyPaths(t *testing.T) {
	s := startServer(t, testConfig(t))
	root := t.TempDir()
	const secret = "SECRET-KEY-MATERIAL"
	os.MkdirAll(filepath.Join(root, ".ssh"), 0o700)
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	os.WriteFile(filepath.Join(root, ".ssh", "id_rsa"), []byte(secret), 0o600)
	os.WriteFile(filepath.Join(root, "sub", "cert.pem"), []byte(secret), 0o600)
	os.WriteFile(filepath.Join(root, "ok.txt"), []byte("fine "+secret[:6]), 0o644)
	os.Symlink(".ssh", filepath.Join(root, "keys"))                // a link to the denied directory
	os.Symlink(".ssh/id_rsa", filepath.Join(root, "innocent.txt")) // a link to a denied file
	os.Symlink("../keys", filepath.Join(root, "sub", "chain"))     // a link to a link
	_, prefix := policyAgent(t, s, "deny", root, `{"denyPaths": [".ssh", "**/*.pem"]}`)
	gitInit(t, root)
	runPolicyCases(t, s, prefix, []policyCase{
		{name: "stat", method: "GET", path: q("/fs/stat", "path", ".ssh"), rule: "denyPaths"},
		{name: "list", method: "GET", path: q("/fs/list", "path", ".ssh"), rule: "denyPaths"},
		{name: "read", method: "GET", path: q("/fs/file", "path", ".ssh/id_rsa"), rule: "denyPaths"},
		{name: "read via ..", method: "GET", path: q("/fs/file", "path", "sub/../.ssh/id_rsa"), rule: "denyPaths"},
		{name: "read with leading slash", method: "GET", path: q("/fs/file", "path", "/.ssh/id_rsa"), rule: "denyPaths"},
		{name: "read via a linked directory", method: "GET", path: q("/fs/file", "path", "keys/id_rsa"), rule: "denyPaths"},
		{name: "read via a linked file", method: "GET", path: q("/fs/file", "path", "innocent.txt"), rule: "denyPaths"},
		{name: "read via a chain of links", method: "GET", path: q("/fs/file", "path", "sub/chain/id_rsa"), rule: "denyPaths"},
		{name: "list via link", method: "GET", path: q("/fs/list", "path", "keys"), rule: "denyPaths"},
		{name: "glob at depth", method: "GET", path: q("/fs/file", "path", "sub/cert.pem"), rule: "denyPaths"},
		{name: "search", method: "GET", path: q("/fs/search", "path", ".ssh", "query", "SECRET"), rule: "denyPaths"},
		{name: "find", method: "GET", path: q("/fs/find", "path", "keys", "glob", "*"), rule: "denyPaths"},
		{name: "watch", method: "GET", path: q("/fs/watch", "path", ".ssh"), rule: "denyPaths"},
		{name: "archive", method: "GET", path: q("/fs/archive", "path", ".ssh"), rule: "denyPaths"},
		{name: "write", method: "PUT", path: q("/fs/file", "path", ".ssh/authorized_keys"), body: "k", rule: "denyPaths"},
		{name: "write via link", method: "PUT", path: q("/fs/file", "path", "keys/authorized_keys"), body: "k", rule: "denyPaths"},
		{name: "mkdir", method: "POST", path: "/fs/mkdir", body: map[string]any{"path": ".ssh/d"}, rule: "denyPaths"},
		{name: "move out", method: "POST", path: "/fs/move", body: map[string]any{"from": ".ssh/id_rsa", "to": "stolen"}, rule: "denyPaths"},
		{name: "move in", method: "POST", path: "/fs/move", body: map[string]any{"from": "ok.txt", "to": "sub/x.pem"}, rule: "denyPaths"},
		{name: "remove", method: "DELETE", path: q("/fs", "path", ".ssh", "recursive", "true"), rule: "denyPaths"},
		{name: "unpack into", method: "PUT", path: q("/fs/archive", "path", ".ssh"), body: tarOf(t, [2]string{"x", "x"}), rule: "denyPaths"},
		{name: "unpack an entry into", method: "PUT", path: q("/fs/archive", "path", "."), body: tarOf(t, [2]string{".ssh/authorized_keys", "x"}), rule: "denyPaths"},
		{name: "exec cwd", method: "POST", path: "/exec", body: map[string]any{"argv": []string{"true"}, "cwd": ".ssh"}, rule: "denyPaths"},
		{name: "git add", method: "POST", path: "/git/add", body: map[string]any{"paths": []string{".ssh/id_rsa"}}, rule: "denyPaths"},
		{name: "git diff of a path", method: "GET", path: q("/git/diff", "path", ".ssh"), rule: "denyPaths"},
		{name: "git apply writing a denied file", method: "POST", path: "/git/apply", body: map[string]any{"patch": "diff --git a/.ssh/authorized_keys b/.ssh/authorized_keys\nnew file mode 100644\n--- /dev/null\n+++ b/.ssh/authorized_keys\n@@ -0,0 +1 @@\n+ssh-ed25519 AAAA attacker\n"}, rule: "denyPaths"},
		{name: "allowed file", method: "GET", path: q("/fs/file", "path", "ok.txt"), wantStatus: 200},
	})
	// Walks below an allowed path leave the denied ones out.
	for _, tc := range []struct{ name, path string }{
		{"list -r", q("/fs/list", "path", ".", "recursive", "true")},
		{"search", q("/fs/search", "path", ".", "query", "SECRET")},
		{"find", q("/fs/find", "path", ".", "glob", "*")},
		{"archive", q("/fs/archive", "path", ".")},
	} {
		t.Run("walk "+tc.name, func(t *testing.T) {
			status, body := call(t, s, "GET", prefix+tc.path, s.AdminToken(), nil)
			if status != 200 {
				t.Fatalf("%d %s", status, body)
			}
			if bytes.Contains(body, []byte(secret)) {
				t.Errorf("%s shows the secret: %.300s", tc.name, body)
			}
			names := walkedPaths(t, tc.name, body)
			for _, n := range names {
				if strings.HasPrefix(n, ".ssh") || strings.HasSuffix(n, ".pem") {
					t.Errorf("%s shows denied path %s", tc.name, n)
				}
			}
			if !slices.Contains(names, "ok.txt") {
				t.Errorf("%s lost the allowed ok.txt: %q", tc.name, names)
			}
		})
	}
	// Git's answers leave denied files out: a tracked secret that changed
	// is neither in the status nor in the diff.
	gitRun(t, root, "add", "-f", ".ssh/id_rsa", "ok.txt")
	gitRun(t, root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "tracked")
	os.WriteFile(filepath.Join(root, ".ssh", "id_rsa"), []byte(secret+"-2"), 0o600)
	os.WriteFile(filepath.Join(root, "ok.txt"), []byte("changed"), 0o644)
	for _, p := range []string{"/git/status", "/git/diff"} {
		status, body := call(t, s, "GET", prefix+p, s.AdminToken(), nil)
		if status != 200 || bytes.Contains(body, []byte(secret)) || bytes.Contains(body, []byte("id_rsa")) || !bytes.Contains(body, []byte("ok.txt")) {
			t.Errorf("%s: %d %s, want ok.txt and nothing of .ssh", p, status, body)
		}
	}
	// Staging never takes a denied file in: add of a directory, add all,
	// commit -a, commit with untracked files.
	os.WriteFile(filepath.Join(root, "sub", "new.pem"), []byte(secret), 0o600)
	base := strings.TrimSpace(gitOut(t, root, "rev-parse", "HEAD"))
	for _, c := range []struct {
		path string
		body map[string]any
	}{
		{"/git/add", map[string]any{"paths": []string{"sub"}}},
		{"/git/add", map[string]any{"all": true}},
		{"/git/commit", map[string]any{"message": "a", "all": true, "authorName": "t", "authorEmail": "t@t"}},
		{"/git/commit", map[string]any{"message": "u", "includeUntracked": true, "authorName": "t", "authorEmail": "t@t"}},
	} {
		status, body := call(t, s, "POST", prefix+c.path, s.AdminToken(), c.body)
		if status >= 300 && status != 409 {
			t.Fatalf("%s %v: %d %s", c.path, c.body, status, body)
		}
		staged := gitOut(t, root, "diff", "--cached", "--name-only")
		committed := gitOut(t, root, "log", "--name-only", "--format=", base+"..HEAD")
		if strings.Contains(staged+committed, ".pem") || strings.Contains(committed, "id_rsa") || strings.Contains(staged, "id_rsa") {
			t.Fatalf("after %s %v: staged %q, last commit %q", c.path, c.body, staged, committed)
		}
	}
	if !strings.Contains(gitOut(t, root, "log", "--name-only", "--format=", base+"..HEAD"), "ok.txt") {
		t.Fatal("the allowed change was never committed")
	}
	os.WriteFile(filepath.Join(root, ".ssh", "id_rsa"), []byte(secret), 0o600)
	if b, _ := os.ReadFile(filepath.Join(root, ".ssh", "id_rsa")); string(b) != secret {
		t.Fatal("the denied file changed")
	}
	if _, err := os.Lstat(filepath.Join(root, ".ssh", "authorized_keys")); err == nil {
		t.Fatal("a denied write landed")
	}
}

// walkedPaths are the paths a list, find, search or archive answer names.
func walkedPaths(t *testing.T, what string, body []byte) []string {
	t.Helper()
	var out []string
	if what == "archive" {
		tr := tar.NewReader(bytes.NewReader(body))
		for {
			h, err := tr.Next()
			if err != nil {
				return out
			}
			out = append(out, h.Name)
		}
	}
	var res struct {
		Entries []struct{ Path string } `json:"entries"`
		Matches []struct{ Path string } `json:"matches"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for _, e := range append(res.Entries, res.Matches...) {
		out = append(out, e.Path)
	}
	return out
}

func TestPauseOverHTTP(t *testing.T) {
	s := startServer(t, testConfig(t))
	a, prefix := policyAgent(t, s, "pausy", t.TempDir(), `{}`)
	ex := map[string]any{"argv": []string{"true"}}
	agentJSON := func() client.Agent {
		_, body := call(t, s, "GET", prefix, s.AdminToken(), nil)
		var ag client.Agent
		if err := json.Unmarshal(body, &ag); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return ag
	}
	if ag := agentJSON(); ag.Paused || ag.Policy == nil || !ag.Capabilities["policy"] {
		t.Fatalf("before pause: %+v", ag)
	}
	a.Pause()
	for _, c := range []struct{ method, path string }{{"POST", "/exec"}, {"GET", "/fs/list?path=."}, {"GET", "/capabilities"}} {
		status, body := call(t, s, c.method, prefix+c.path, s.AdminToken(), ex)
		if status != http.StatusServiceUnavailable {
			t.Fatalf("paused %s %s: %d %s, want 503", c.method, c.path, status, body)
		}
		if code, reason := errorCode(t, body); code != wire.CodeUnavailable || reason != wire.ReasonAgentPaused {
			t.Fatalf("paused %s: %s", c.path, body)
		}
	}
	waitFor(t, waitLong, "paused in the Agent JSON", func() bool { return agentJSON().Paused })
	if ag := agentJSON(); ag.Status != client.StatusOnline {
		t.Fatalf("paused agent status %q, want online", ag.Status)
	}
	a.Resume()
	if status, body := call(t, s, "POST", prefix+"/exec", s.AdminToken(), ex); status != 200 {
		t.Fatalf("resumed exec: %d %s", status, body)
	}
	waitFor(t, waitLong, "not paused in the Agent JSON", func() bool { return !agentJSON().Paused })
}

// The owner's pause switch through the local control socket, as outpost
// agent pause/resume/status use it, over the real agent and HTTP.
func TestControlSocketPauseResume(t *testing.T) {
	s := startServer(t, testConfig(t))
	a, prefix := policyAgent(t, s, "sock", t.TempDir(), `{}`)
	sock := filepath.Join(t.TempDir(), "agent.json.sock")
	srv, err := control.Listen(sock, a, false, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v, want 0600", fi.Mode(), err)
	}
	if _, err := control.Listen(sock, a, false, testLogger()); err == nil {
		t.Fatal("a second daemon listened on a live socket")
	}
	ctx := context.Background()
	st, err := control.Call(ctx, sock, "pause")
	if err != nil || !st.Paused || st.Connection != "connected" || st.URL != s.URL() || st.Agent != "sock" {
		t.Fatalf("pause: %+v %v", st, err)
	}
	status, body := call(t, s, "POST", prefix+"/exec", s.AdminToken(), map[string]any{"argv": []string{"true"}})
	if code, reason := errorCode(t, body); status != 503 || code != wire.CodeUnavailable || reason != wire.ReasonAgentPaused {
		t.Fatalf("paused exec: %d %s", status, body)
	}
	if st, err = control.Call(ctx, sock, "resume"); err != nil || st.Paused {
		t.Fatalf("resume: %+v %v", st, err)
	}
	if status, body := call(t, s, "POST", prefix+"/exec", s.AdminToken(), map[string]any{"argv": []string{"true"}}); status != 200 {
		t.Fatalf("resumed exec: %d %s", status, body)
	}
	if _, err := control.Call(ctx, sock, "explode"); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("unknown command: %v", err)
	}
	srv.Close()
	if _, err := control.Call(ctx, sock, "status"); !errors.Is(err, control.ErrNotRunning) {
		t.Fatalf("status after close: %v, want ErrNotRunning", err)
	}
}

// Every op type leaves an audit line with its op, path or argv and result,
// and no line holds file content, stdin or an env value.
func TestAuditLinesForEveryOp(t *testing.T) {
	s := startServer(t, testConfig(t))
	root := t.TempDir()
	const content, stdin, envValue = "FILE-CONTENT-MARKER", "STDIN-MARKER", "ENV-VALUE-MARKER"
	a, prefix, auditFile := policyAgentAudited(t, s, "audited", root, `{"denyPaths": [".ssh"]}`)
	_ = a
	gitInit(t, root)
	steps := []struct {
		method, path string
		body         any
		op, where    string
		result       string
	}{
		{"PUT", q("/fs/file", "path", "a.txt"), content, wire.OpFsWrite, `"path":"a.txt"`, "ok"},
		{"GET", q("/fs/file", "path", "a.txt"), nil, wire.OpFsOpen, `"path":"a.txt"`, "ok"},
		{"GET", q("/fs/stat", "path", "a.txt"), nil, wire.OpFsStat, `"path":"a.txt"`, "ok"},
		{"GET", q("/fs/list", "path", "."), nil, wire.OpFsList, `"path":"."`, "ok"},
		{"POST", "/fs/mkdir", map[string]any{"path": "d"}, wire.OpFsMkdir, `"path":"d"`, "ok"},
		{"POST", "/fs/move", map[string]any{"from": "a.txt", "to": "d/b.txt"}, wire.OpFsMove, `"to":"d/b.txt"`, "ok"},
		{"GET", q("/fs/search", "path", ".", "query", "MARKER"), nil, wire.OpFsSearch, `"path":"."`, "ok"},
		{"GET", q("/fs/find", "path", ".", "glob", "*.txt"), nil, wire.OpFsFind, `"path":"."`, "ok"},
		{"GET", q("/fs/archive", "path", "d"), nil, wire.OpFsArchiveOpen, `"path":"d"`, "ok"},
		{"PUT", q("/fs/archive", "path", "e"), tarOf(t, [2]string{"x.txt", content}), wire.OpFsUnpackBegin, `"path":"e"`, "ok"},
		{"DELETE", q("/fs", "path", "e", "recursive", "true"), nil, wire.OpFsRemove, `"path":"e"`, "ok"},
		{"POST", "/exec", map[string]any{"argv": []string{"cat"}, "stdin": stdin, "env": map[string]string{"X": envValue}}, wire.OpExec, `"argv":["cat"]`, "ok"},
		{"POST", "/exec", map[string]any{"command": "echo hi"}, wire.OpExec, `"argv":["sh","-c","echo hi"]`, "ok"},
		{"POST", "/processes", map[string]any{"id": "p1", "argv": []string{"sleep", "30"}}, wire.OpProcStart, `"argv":["sleep","30"]`, "ok"},
		{"GET", "/processes", nil, wire.OpProcList, "", "ok"},
		{"DELETE", "/processes/p1", nil, wire.OpProcTerminate, "", "ok"},
		{"GET", "/git/status", nil, wire.OpGitStatus, "", "ok"},
		{"POST", "/git/add", map[string]any{"all": true}, wire.OpGitAdd, "", "ok"},
		{"POST", "/git/commit", map[string]any{"message": "m"}, wire.OpGitCommit, "", "ok"},
		{"GET", "/git/log", nil, wire.OpGitLog, "", "ok"},
		{"GET", q("/fs/file", "path", ".ssh/k"), nil, wire.OpFsOpen, `"path":".ssh/k"`, "permission_denied/policy"},
	}
	for _, st := range steps {
		status, body := call(t, s, st.method, prefix+st.path, s.AdminToken(), st.body)
		if status >= 300 && st.result == "ok" {
			t.Fatalf("%s %s: %d %s", st.method, st.path, status, body)
		}
	}
	data, err := os.ReadFile(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{content, stdin, envValue} {
		if bytes.Contains(data, []byte(leak)) {
			t.Errorf("the audit log holds %q", leak)
		}
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, st := range steps {
		found := false
		for _, l := range lines {
			var e audit.Event
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("audit line %q: %v", l, err)
			}
			if e.Op == st.op && strings.Contains(l, st.where) && e.Result == st.result && !e.Time.IsZero() {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no audit line for %s %s (op %s, %s, result %s) in:\n%s", st.method, st.path, st.op, st.where, st.result, data)
		}
	}
	if fi, _ := os.Stat(auditFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode %v, want 0600", fi.Mode())
	}
}

// The control plane keeps a copy of every agent's audit events and serves
// them by workspace and agent, in pages.
func TestAuditCopyInTheControlPlane(t *testing.T) {
	s := startServer(t, testConfig(t))
	_, prefix, _ := policyAgentAudited(t, s, "one", t.TempDir(), `{}`)
	_, otherPrefix, _ := policyAgentAudited(t, s, "two", t.TempDir(), `{}`)
	for i := 0; i < 5; i++ {
		call(t, s, "POST", prefix+"/exec", s.AdminToken(), map[string]any{"argv": []string{"echo", strconv.Itoa(i)}})
	}
	call(t, s, "GET", otherPrefix+"/fs/list?path=.", s.AdminToken(), nil)
	type page = client.AuditPage
	get := func(query string) page {
		t.Helper()
		v, err := url.ParseQuery(strings.TrimPrefix(query, "?"))
		if err != nil {
			t.Fatal(err)
		}
		limit, _ := strconv.Atoi(v.Get("limit"))
		p, err := adminClient(s).Audit(context.Background(), "ws1", client.AuditOptions{Agent: v.Get("agent"), After: v.Get("after"), Limit: limit})
		if err != nil {
			t.Fatalf("audit%s: %v", query, err)
		}
		return *p
	}
	waitFor(t, waitLong, "six events in the copy", func() bool { return len(get("?limit=100").Events) == 6 })
	var seen []string
	after := ""
	for i := 0; i < 3; i++ {
		p := get("?agent=one&limit=2" + after)
		for _, e := range p.Events {
			if e.Agent != "one" || e.Op != wire.OpExec || e.Result != "ok" {
				t.Fatalf("event %+v", e)
			}
			seen = append(seen, e.Argv[1])
		}
		after = "&after=" + p.Next
	}
	if strings.Join(seen, ",") != "0,1,2,3,4" {
		t.Fatalf("paged events %q, want 0..4 in order", seen)
	}
	if p := get("?agent=one" + after); len(p.Events) != 0 {
		t.Fatalf("past the end: %+v", p)
	}
	if p := get("?agent=two"); len(p.Events) != 1 || p.Events[0].Op != wire.OpFsList {
		t.Fatalf("agent two: %+v", p)
	}
	for _, bad := range []string{"?limit=0", "?after=x", "?agent=Bad.Id"} {
		if status, body := call(t, s, "GET", "/v1/workspaces/ws1/audit"+bad, s.AdminToken(), nil); status != 400 {
			t.Errorf("audit%s: %d %s, want 400", bad, status, body)
		}
	}
}

// groupSize counts the processes in process group pgid on this machine.
func groupSize(pgid int) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces; cut after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			n++
		}
	}
	return n
}

// The owner's limits: a fork bomb under processes: 50 stays at 50 while
// the agent keeps serving, and a memory hog over memoryBytes is killed.
func TestPolicyLimits(t *testing.T) {
	s := startServer(t, testConfig(t))
	_, prefix := policyAgent(t, s, "limited", t.TempDir(), `{"limits": {"processes": 50, "memoryBytes": 67108864}}`)
	_, body := call(t, s, "GET", prefix+"/capabilities", s.AdminToken(), nil)
	var caps client.Capabilities
	if err := json.Unmarshal(body, &caps); err != nil || caps.Policy == nil {
		t.Fatalf("capabilities: %v %s", err, body)
	}
	if caps.Policy.LimitsBy != "cgroup1" {
		// Never run a fork bomb that nothing bounds on a shared machine.
		t.Fatalf("limits applied by %q: this machine gives the agent no cgroup to bound a fork bomb", caps.Policy.LimitsBy)
	}
	if caps.Policy.Limits.Processes != 50 {
		t.Fatalf("summary limits %+v", caps.Policy.Limits)
	}

	t.Run("memory hog", func(t *testing.T) {
		status, body := call(t, s, "POST", prefix+"/exec", s.AdminToken(), map[string]any{
			"argv": []string{"sh", "-c", `cat /proc/self/cgroup >&2; x=$(head -c 300000000 /dev/zero | tr '\0' a); echo ${#x}`}, "timeoutMs": 60000})
		if status != 200 {
			t.Fatalf("exec: %d %s", status, body)
		}
		var res client.ExecResult
		json.Unmarshal(body, &res)
		// The hog ran in a box of the agent's (outpost-<pid>/<n>) in the
		// memory hierarchy, and the box's bound ended it.
		if !regexp.MustCompile(`(?m)^[0-9]+:([a-z_]+,)*memory(,[a-z_]+)*:.*/outpost-[0-9]+/[0-9]+$`).MatchString(res.Stderr) {
			t.Errorf("the hog's cgroups, not a box of the agent's in the memory hierarchy:\n%s", res.Stderr)
		}
		if res.ExitCode != 137 || strings.Contains(res.Stdout, "300000000") {
			t.Fatalf("memory hog: exit %d stdout %q stderr %q, want killed (137)", res.ExitCode, res.Stdout, res.Stderr)
		}
	})

	t.Run("fork bomb", func(t *testing.T) {
		status, body := call(t, s, "POST", prefix+"/processes", s.AdminToken(), map[string]any{
			"id": "bomb", "argv": []string{"bash", "-c", `:(){ :|:& };: ; exec sleep 30`}})
		if status != 201 {
			t.Fatalf("start: %d %s", status, body)
		}
		var started struct{ PID int }
		json.Unmarshal(body, &started)
		// Sample the bomb's group until it has pressed against the limit
		// for a while, checking the agent answers all along.
		peak, rounds := 0, 0
		deadline := time.Now().Add(waitLong)
		for time.Now().Before(deadline) && rounds < 20 {
			n := groupSize(started.PID)
			peak = max(peak, n)
			if peak >= 30 {
				rounds++
			}
			status, body := call(t, s, "POST", prefix+"/exec", s.AdminToken(), map[string]any{"argv": []string{"echo", "alive"}})
			if status != 200 || !strings.Contains(string(body), "alive") {
				t.Fatalf("exec during the bomb: %d %s", status, body)
			}
		}
		if peak > 50 || peak < 30 {
			t.Fatalf("the bomb's group peaked at %d processes, want at most 50 (and the bomb to have run: at least 30)", peak)
		}
		t.Logf("the bomb's group peaked at %d processes", peak)
		if status, body := call(t, s, "DELETE", prefix+"/processes/bomb", s.AdminToken(), nil); status != 200 {
			t.Fatalf("terminate: %d %s", status, body)
		}
		waitFor(t, waitLong, "the bomb gone", func() bool { return groupSize(started.PID) == 0 })
	})
}
