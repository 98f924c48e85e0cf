package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// exitCode is the exit status of a finished command (0 for a nil error).
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("command did not run: %v", err)
	return -1
}

// TestFsAndGitCommandsOverBinary drives the file and git commands that
// needed curl before (fs stat|mkdir|mv, git log|commit|apply), their --json,
// and their errors: extra arguments, a directory given to fs put, a path
// that is not there (exit 1, the reason on stderr).
func TestFsAndGitCommandsOverBinary(t *testing.T) {
	e := newAgentEnv(t)

	e.cli(t, nil, "fs", "mkdir", "-p", "a/b/c")
	if fi, err := os.Stat(filepath.Join(e.root, "a", "b", "c")); err != nil || !fi.IsDir() {
		t.Fatalf("mkdir -p: %v %v", fi, err)
	}
	if _, errOut, err := e.cliErr(nil, "fs", "mkdir", "a"); exitCode(t, err) != 1 || !strings.Contains(errOut, "already_exists") {
		t.Fatalf("mkdir of an existing dir without -p: %v, stderr %q; want exit 1 and already_exists", err, errOut)
	}
	e.cli(t, strings.NewReader("hello\n"), "fs", "put", "-", "a/x.txt")
	e.cli(t, nil, "fs", "mv", "a/x.txt", "a/b/y.txt")
	if b, err := os.ReadFile(filepath.Join(e.root, "a", "b", "y.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("after mv: %q, %v", b, err)
	}
	var moved client.FileStat
	if err := json.Unmarshal([]byte(e.cli(t, nil, "fs", "mv", "--json", "a/b/y.txt", "a/z.txt")), &moved); err != nil || moved.Path != "a/z.txt" || moved.Size != 6 {
		t.Fatalf("mv --json: %+v, %v", moved, err)
	}
	stat := e.cli(t, nil, "fs", "stat", "a/z.txt")
	for _, want := range []string{"a/z.txt", "file", "6", "0644"} {
		if !strings.Contains(stat, want) {
			t.Fatalf("stat lacks %q:\n%s", want, stat)
		}
	}
	var st client.FileStat
	if err := json.Unmarshal([]byte(e.cli(t, nil, "fs", "stat", "--json", "a")), &st); err != nil || st.Type != "dir" {
		t.Fatalf("stat --json: %+v, %v", st, err)
	}
	var list client.FileList
	if err := json.Unmarshal([]byte(e.cli(t, nil, "fs", "ls", "--json", "-r", "a")), &list); err != nil || len(list.Entries) != 3 || list.Entries[1].Path != "a/b/c" || list.Entries[2].Path != "a/z.txt" {
		t.Fatalf("ls --json -r a: %+v, %v; want a/b, a/b/c and a/z.txt", list, err)
	}
	var put client.WriteResult
	if err := json.Unmarshal([]byte(e.cli(t, strings.NewReader("x"), "fs", "put", "--json", "-", "p.txt")), &put); err != nil || put.Size != 1 || put.SHA256 != sha256Hex([]byte("x")) {
		t.Fatalf("put --json: %+v, %v", put, err)
	}

	dir := t.TempDir()
	_, errOut, err := e.cliErr(nil, "fs", "put", dir, "d")
	if exitCode(t, err) != 1 || !strings.Contains(errOut, dir+" is a directory") || !strings.Contains(errOut, "-r") {
		t.Fatalf("put of a directory: %v, stderr %q; want exit 1, says it is a directory and names -r", err, errOut)
	}
	if _, errOut, err := e.cliErr(nil, "fs", "get", "a", "-"); exitCode(t, err) != 1 || !strings.Contains(errOut, "a is a directory") || !strings.Contains(errOut, "-r") {
		t.Fatalf("get of a directory: %v, stderr %q; want exit 1, says it is a directory and names -r", err, errOut)
	}
	if _, errOut, err := e.cliErr(nil, "fs", "stat", "nope"); exitCode(t, err) != 1 || !strings.Contains(errOut, "not_found") {
		t.Fatalf("stat of a missing path: %v, stderr %q", err, errOut)
	}
	for _, args := range [][]string{
		{"fs", "stat", "a", "b"}, {"fs", "ls", "a", "b"}, {"fs", "mv", "a"}, {"fs", "mv", "a", "b", "c"},
		{"git", "status", "r1", "r2"}, {"git", "log", "r1", "r2"}, {"git", "diff", "r1", "r2"},
		{"agents", "ls", "extra"}, {"version", "extra"}, {"context", "use"},
	} {
		if _, errOut, err := e.cliErr(nil, args...); exitCode(t, err) != 1 || !strings.Contains(errOut, "argument") {
			t.Errorf("outpost %s: %v, stderr %q; want exit 1 naming the arguments", strings.Join(args, " "), err, errOut)
		}
	}

	repo := filepath.Join(e.root, "repo")
	gitIn(t, e.root, "init", "-q", "repo")
	writeRepoFile(t, repo, "a.txt", "one\n")
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-qm", "first")
	writeRepoFile(t, repo, "a.txt", "one\ntwo\n")
	out := e.cli(t, nil, "git", "commit", "-a", "-m", "second: two", "--author", "Ada <ada@example.com>", "repo")
	if !strings.Contains(out, "second: two") {
		t.Fatalf("git commit printed %q", out)
	}
	if got := gitIn(t, repo, "log", "-1", "--format=%an <%ae> %s"); strings.TrimSpace(got) != "Ada <ada@example.com> second: two" {
		t.Fatalf("the commit on the agent: %q", got)
	}
	if _, errOut, err := e.cliErr(nil, "git", "commit", "repo"); exitCode(t, err) != 1 || !strings.Contains(errOut, "-m") {
		t.Fatalf("commit without a message: %v, %q", err, errOut)
	}
	log := e.cli(t, nil, "git", "log", "repo")
	if lines := strings.Split(strings.TrimSpace(log), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "Ada") || !strings.Contains(lines[0], "second: two") || !strings.Contains(lines[1], "first") {
		t.Fatalf("git log:\n%s", log)
	}
	var gl client.GitLog
	if err := json.Unmarshal([]byte(e.cli(t, nil, "git", "log", "--json", "-n", "1", "repo")), &gl); err != nil || len(gl.Commits) != 1 || gl.Commits[0].Subject != "second: two" {
		t.Fatalf("git log --json -n 1: %+v, %v", gl, err)
	}

	patch := "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,3 @@\n one\n two\n+three\n"
	if out := e.cli(t, strings.NewReader(patch), "git", "apply", "--check", "-", "repo"); !strings.Contains(out, "applies") {
		t.Fatalf("apply --check printed %q", out)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "one\ntwo\n" {
		t.Fatalf("--check changed the file: %q", b)
	}
	pf := filepath.Join(t.TempDir(), "p.diff")
	if err := os.WriteFile(pf, []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	var applied client.GitApplyResult
	if err := json.Unmarshal([]byte(e.cli(t, nil, "git", "apply", "--json", pf, "repo")), &applied); err != nil || !applied.Applied {
		t.Fatalf("apply --json: %+v, %v", applied, err)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("after apply: %q", b)
	}
	if _, errOut, err := e.cliErr(nil, "git", "apply", pf, "repo"); exitCode(t, err) != 1 || !strings.Contains(errOut, "conflict") {
		t.Fatalf("applying again: %v, %q; want exit 1 and a conflict", err, errOut)
	}
}

// TestAgentChoiceSaysWhichThereAre: with two agents and none named, a
// command lists them and says --agent.
func TestAgentChoiceSaysWhichThereAre(t *testing.T) {
	cp := startControlPlane(t)
	ws := cp.workspace("default")
	for _, id := range []string{"laptop", "server"} {
		startAgent(t, cp.enroll(ws, id, ""), t.TempDir())
		cp.waitStatus(ws, id, "online")
	}
	out, err := cli(t, cp, adminToken, ws, "fs", "ls")
	if exitCode(t, err) != 1 {
		t.Fatalf("fs ls with two agents: %v\n%s", err, out)
	}
	for _, want := range []string{"workspace default has 2 agents", "laptop (online)", "server (online)", "--agent"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the error lacks %q:\n%s", want, out)
		}
	}
	if out := mustCLI(t, cp, adminToken, ws, "fs", "ls", "--agent", "server"); strings.Contains(out, "agents") {
		t.Fatalf("fs ls --agent server: %s", out)
	}
	// Completion offers the workspace's agents after --agent and agents rm.
	for _, words := range [][]string{{"fs", "ls", "--agent", ""}, {"exec", "--agent", "s"}, {"agents", "rm", ""}} {
		out := mustCLI(t, cp, adminToken, ws, append([]string{"__complete"}, words...)...)
		want := "laptop\nserver\n"
		if words[len(words)-1] == "s" {
			want = "server\n"
		}
		if out != want {
			t.Fatalf("completing %q: %q, want %q", words, out, want)
		}
	}
}

// contextEnv is an environment with no OUTPOST_URL/OUTPOST_TOKEN and the
// contexts kept in dir.
func contextEnv(dir string) []string {
	return append(os.Environ(), "OUTPOST_URL=", "OUTPOST_TOKEN=", "OUTPOST_WORKSPACE=", "OUTPOST_CONTEXT=", "OUTPOST_AGENT=", "OUTPOST_CONFIG_DIR="+dir)
}

// runIn runs the binary with env and stdin, and returns stdout, stderr and
// the exit status.
func runIn(t *testing.T, env []string, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(outpostBin, args...)
	cmd.Env, cmd.Stdin = env, stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), exitCode(t, err)
}

// TestLoginContexts: `outpost login` checks the token and saves a context
// (0600) that client commands use when the environment names no control
// plane; the token is read from stdin when not given, never echoed on a
// terminal, and never printed; logout forgets it.
func TestLoginContexts(t *testing.T) {
	cp := startControlPlane(t)
	ws := cp.workspace("w1")
	key, err := cp.cl.CreateKey(ctx(t), ws)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "cfg")
	env := contextEnv(dir)

	if _, errOut, code := runIn(t, env, nil, "agents"); code != 1 || !strings.Contains(errOut, "outpost login") {
		t.Fatalf("no context and no token: exit %d, %q; want 1 and a pointer to outpost login", code, errOut)
	}
	if _, errOut, code := runIn(t, env, strings.NewReader("opk_wrong\n"), "login", "--url", cp.url, "--workspace", ws); code != 1 || !strings.Contains(errOut, "unauthenticated") || !strings.Contains(errOut, "nothing saved") {
		t.Fatalf("login with a wrong token: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "contexts.json")); !os.IsNotExist(err) {
		t.Fatalf("a failed login saved something: %v", err)
	}
	out, errOut, code := runIn(t, env, strings.NewReader(key+"\n"), "login", "--url", cp.url, "--workspace", ws, "--name", "dev")
	if code != 0 || !strings.Contains(out, "context dev") || strings.Contains(out+errOut, key) {
		t.Fatalf("login from stdin: exit %d\n%s%s", code, out, errOut)
	}
	fi, err := os.Stat(filepath.Join(dir, "contexts.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("contexts file: %v, %v; want mode 0600", fi, err)
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("contexts dir: %v, %v; want mode 0700", di, err)
	}
	if out, errOut, code := runIn(t, env, nil, "agents"); code != 0 || !strings.Contains(out, "ID") {
		t.Fatalf("agents with the context: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := runIn(t, env, nil, "token", "create", "--json"); code != 0 || !strings.Contains(out, "opt_") {
		t.Fatalf("token create in the context's workspace: exit %d\n%s", code, out)
	}

	// A second context, by --token, becomes current; --context and
	// OUTPOST_CONTEXT pick either; the listing shows no token.
	ws2 := cp.workspace("w2")
	if _, errOut, code := runIn(t, env, nil, "login", "--url", cp.url, "--token", adminToken, "--workspace", ws2, "--name", "admin"); code != 0 {
		t.Fatalf("login --token: %s", errOut)
	}
	ls, _, _ := runIn(t, env, nil, "context", "ls")
	if !strings.Contains(ls, "* admin") || !strings.Contains(ls, "  dev") || strings.Contains(ls, key) || strings.Contains(ls, adminToken) {
		t.Fatalf("context ls:\n%s", ls)
	}
	whichWS := func(extraEnv []string, args ...string) string {
		out, errOut, code := runIn(t, append(env, extraEnv...), nil, append([]string{"token", "create", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("token create %v %v: %s", extraEnv, args, errOut)
		}
		var tok client.EnrollmentToken
		if err := json.Unmarshal([]byte(out), &tok); err != nil {
			t.Fatal(err)
		}
		toks, err := cp.cl.ListEnrollmentTokens(ctx(t), ws2)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range toks {
			if x.ID == tok.ID {
				return ws2
			}
		}
		return ws
	}
	if got := whichWS(nil); got != ws2 {
		t.Fatalf("current context admin: token made in %s, want %s", got, ws2)
	}
	if got := whichWS(nil, "--context", "dev"); got != ws {
		t.Fatalf("--context dev: token made in %s, want %s", got, ws)
	}
	if got := whichWS([]string{"OUTPOST_CONTEXT=dev"}); got != ws {
		t.Fatalf("OUTPOST_CONTEXT=dev: token made in %s, want %s", got, ws)
	}
	// OUTPOST_URL set: the environment names the control plane and the
	// current context stays out (its token never goes to another URL).
	if _, errOut, code := runIn(t, append(env, "OUTPOST_URL="+cp.url), nil, "agents"); code != 1 || !strings.Contains(errOut, "no token") {
		t.Fatalf("OUTPOST_URL without a token: exit %d, %q; want 1, no token", code, errOut)
	}
	if _, errOut, code := runIn(t, env, nil, "agents", "--context", "admin", "--url", "http://127.0.0.1:1"); code != 1 || !strings.Contains(errOut, "no token") {
		t.Fatalf("--url other than the context's: exit %d, %q; want its token kept back", code, errOut)
	}

	if out, _, code := runIn(t, env, nil, "context", "use", "dev"); code != 0 || !strings.Contains(out, "dev") {
		t.Fatalf("context use dev: %s", out)
	}
	if out, _, code := runIn(t, env, nil, "logout"); code != 0 || !strings.Contains(out, "dev") {
		t.Fatalf("logout: %s", out)
	}
	var list struct {
		Contexts []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
		} `json:"contexts"`
	}
	out, _, _ = runIn(t, env, nil, "context", "ls", "--json")
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Contexts) != 1 || list.Contexts[0].Name != "admin" || list.Contexts[0].Current {
		t.Fatalf("after logout: %s, %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "contexts.json")); strings.Contains(string(b), key) {
		t.Fatalf("the logged-out token is still in the file")
	}
	if _, errOut, code := runIn(t, env, nil, "agents"); code != 1 || !strings.Contains(errOut, "no token") {
		t.Fatalf("no current context: exit %d, %q", code, errOut)
	}
}

// TestLoginReadsTheTokenWithoutEcho types the token at login's prompt on a
// terminal: the screen shows the prompt, never the token.
func TestLoginReadsTheTokenWithoutEcho(t *testing.T) {
	cp := startControlPlane(t)
	ws := cp.workspace("w1")
	dir := filepath.Join(t.TempDir(), "cfg")
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	cmd := exec.Command(outpostBin, "login", "--url", cp.url, "--workspace", ws)
	cmd.Env = contextEnv(dir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	screen := make(chan string, 1)
	prompted := make(chan struct{})
	go func() {
		var all []byte
		buf := make([]byte, 4096)
		once := false
		for {
			n, err := ptmx.Read(buf)
			all = append(all, buf[:n]...)
			if !once && bytes.Contains(all, []byte("token for ")) {
				once = true
				close(prompted)
			}
			if err != nil { // EIO once the command exits
				screen <- string(all)
				return
			}
		}
	}()
	select {
	case <-prompted:
	case <-time.After(startTimeout):
		t.Fatal("no prompt for the token")
	}
	if _, err := ptmx.Write([]byte(adminToken + "\r")); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("login: %v\n%s", err, <-screen)
	}
	got := <-screen
	if strings.Contains(got, adminToken) || !strings.Contains(got, "logged in") {
		t.Fatalf("the terminal showed:\n%q\nwant the prompt and 'logged in', never the token", got)
	}
}

// TestSecretsNeverPrinted: with OUTPOST_TOKEN and OUTPOST_ADMIN_TOKEN set,
// --help and usage errors of the binary print neither.
func TestSecretsNeverPrinted(t *testing.T) {
	const tok, admin = "opadm_E2ESECRETclienttoken0123456789", "opadm_E2ESECRETadmintoken0123456789"
	env := append(os.Environ(), "OUTPOST_TOKEN="+tok, "OUTPOST_ADMIN_TOKEN="+admin)
	for _, args := range [][]string{
		{"--help"}, {"exec", "--help"}, {"fs", "ls", "--help"}, {"token", "create", "-h"}, {"up", "--help"},
		{"serve", "--help"}, {"login", "--help"}, {"fs", "put", "--bogus"}, {"agents", "--nope"},
		{"git", "log", "--token"}, {"session", "ls", "--bad"},
		{"workspace", "--help"}, {"workspace", "set", "--help"}, {"workspace", "set", "--agent-updates"},
	} {
		out, errOut, _ := runIn(t, env, nil, args...)
		if strings.Contains(out+errOut, "E2ESECRET") {
			t.Errorf("outpost %s printed a secret:\n%s%s", strings.Join(args, " "), out, errOut)
		}
		if !strings.Contains(out+errOut, "usage: outpost") {
			t.Errorf("outpost %s printed no usage:\n%s%s", strings.Join(args, " "), out, errOut)
		}
	}
}

// TestVersionAndCompletion: `outpost version` and `--version` print the
// version, commit, Go and protocol versions (a build stamped with -ldflags
// as a release is); `outpost completion bash` completes commands,
// subcommands and flags in a real bash.
func TestVersionAndCompletion(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "outpost")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.version=v1.2.3-e2e -X main.commit=0123456789abcdef", "../../cmd/outpost")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"outpost v1.2.3-e2e", "0123456789abcdef", runtime.Version(), fmt.Sprintf("protocol  %d", wire.Version)} {
			if !strings.Contains(string(out), want) {
				t.Fatalf("outpost %v lacks %q:\n%s", args, want, out)
			}
		}
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	var v struct {
		Version, Commit, Go string
		Protocol            int
	}
	if err != nil || json.Unmarshal(out, &v) != nil || v.Version != "v1.2.3-e2e" || v.Commit != "0123456789abcdef" || v.Go != runtime.Version() || v.Protocol != wire.Version {
		t.Fatalf("version --json: %s, %v", out, err)
	}

	tests := []struct {
		line string // what is typed, the cursor at its end
		want []string
	}{
		{"outpost ver", []string{"version"}},
		{"outpost fs m", []string{"mkdir", "mv"}},
		{"outpost git ", []string{"status", "diff", "log", "commit", "apply", "add", "reset", "branch", "checkout", "clone", "fetch", "pull", "push"}},
		{"outpost fs put --no", []string{"--no-overwrite"}},
		{"outpost completion ", []string{"bash", "zsh", "fish"}},
		{"outpost context ", []string{"ls", "use"}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			words := strings.Fields(tt.line)
			if strings.HasSuffix(tt.line, " ") {
				words = append(words, "")
			}
			quoted := make([]string, len(words))
			for i, w := range words {
				quoted[i] = "'" + w + "'"
			}
			script := fmt.Sprintf(`source <(outpost completion bash)
COMP_WORDS=(%s); COMP_CWORD=%d; _outpost
printf '%%s\n' "${COMPREPLY[@]}"`, strings.Join(quoted, " "), len(words)-1)
			sh := exec.Command("bash", "-c", script)
			sh.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := sh.CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			got := strings.Fields(string(out))
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Fatalf("completions %q, want %q", got, tt.want)
			}
		})
	}
	for _, shell := range []string{"zsh", "fish"} {
		out, err := exec.Command(bin, "completion", shell).Output()
		if err != nil || !strings.Contains(string(out), "outpost __complete") {
			t.Fatalf("completion %s: %v\n%s", shell, err, out)
		}
	}
}

// TestUpOncePerStateDirAndFreePorts: a second `up` on the same state dir
// says where the first runs; with the default ports taken, up picks free
// ones; a NATS address given that is taken says "address already in use".
func TestUpOncePerStateDirAndFreePorts(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "OUTPOST_ADMIN_TOKEN="}
	first, out := runUp(t, env, dir)
	url := ""
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "control" && f[1] == "plane" {
			url = f[2]
		}
	}
	second := startProc(t, env, "up", "--dir", dir, "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--nats-listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	select {
	case <-second.done:
	case <-time.After(startTimeout):
		t.Fatalf("a second up on the same state dir kept running:\n%s", second.output())
	}
	if code := second.cmd.ProcessState.ExitCode(); code != 1 || url == "" || !strings.Contains(second.output(), "already running at "+url) {
		t.Fatalf("second up: exit %d\n%s\nwant 1 and 'already running at %s'", code, second.output(), url)
	}
	first.stop()

	// The default ports taken (by this test, or by whoever has them).
	for _, addr := range []string{"127.0.0.1:7070", "127.0.0.1:4222"} {
		if l, err := net.Listen("tcp", addr); err == nil {
			t.Cleanup(func() { l.Close() })
		}
	}
	state := filepath.Join(home, "state")
	p := startProc(t, env, "up", "--dir", dir, "--state-dir", state)
	waitFor(t, startTimeout, "outpost up's welcome on free ports", func() error {
		select {
		case <-p.done:
			return errStop{fmt.Errorf("outpost up exited:\n%s", p.output())}
		default:
		}
		if !strings.Contains(p.output(), "Ctrl-C stops everything.") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	got := p.output()
	if !strings.Contains(got, "127.0.0.1:7070 is taken") || !strings.Contains(got, "127.0.0.1:4222 is taken") || strings.Contains(got, "control plane  http://127.0.0.1:7070\n") {
		t.Fatalf("up with the default ports taken:\n%s", got)
	}
	p.stop()

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, errOut, code := runIn(t, append(os.Environ(), env...), nil, "up", "--dir", dir, "--state-dir", state, "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--nats-listen", busy.Addr().String())
	if code != 1 || !strings.Contains(errOut, "address already in use") || !strings.Contains(errOut, "--nats-listen") {
		t.Fatalf("up --nats-listen on a taken port: exit %d, %q", code, errOut)
	}
}

// terminalScreen renders what a terminal shows for out: carriage returns,
// newlines and erase-to-end-of-line (the controls the progress line uses).
func terminalScreen(out string) []string {
	lines := []string{""}
	col := 0
	for i := 0; i < len(out); i++ {
		cur := &lines[len(lines)-1]
		switch {
		case out[i] == '\r':
			col = 0
		case out[i] == '\n':
			lines, col = append(lines, ""), 0
		case strings.HasPrefix(out[i:], "\x1b[K"):
			*cur = (*cur)[:col]
			i += 2
		default:
			if col < len(*cur) {
				*cur = (*cur)[:col] + string(out[i]) + (*cur)[col+1:]
			} else {
				*cur += string(out[i])
			}
			col++
		}
	}
	return lines
}

// TestProgressLineOnANarrowTerminal: on a terminal 50 columns wide, `fs
// put` redraws its progress on one line that never wraps, and leaves the
// final count as its last line.
func TestProgressLineOnANarrowTerminal(t *testing.T) {
	e := newAgentEnv(t)
	src := filepath.Join(t.TempDir(), "p.bin")
	writeRandom(t, src, 8<<20)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Cols: 50, Rows: 20}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(outpostBin, "fs", "put", src, "p.bin")
	cmd.Env = append(os.Environ(), "OUTPOST_URL="+e.cp.url, "OUTPOST_TOKEN="+adminToken, "OUTPOST_WORKSPACE="+e.ws, "OUTPOST_AGENT="+e.id)
	cmd.Stderr = tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	raw := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(ptmx) // ends with EIO once the command exits
		raw <- string(b)
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("put: %v", err)
	}
	lines := terminalScreen(strings.ReplaceAll(<-raw, "\r\n", "\n"))
	if len(lines) != 2 || lines[1] != "" {
		t.Fatalf("the screen has %d lines: %q; want the progress line and the cursor below it", len(lines), lines)
	}
	if last := lines[0]; len(last) >= 50 || !strings.HasPrefix(last, "[==============================] 100.0%") {
		t.Fatalf("last line %q (%d wide on 50 columns)", last, len(last))
	}
}
