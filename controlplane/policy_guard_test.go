package controlplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// While exec and processes are off (or commands restricted), the files
// through which git runs programs cannot be written through the API, and
// git ignores hooks and fsmonitor programs already there: git.* ops do not
// become a way to run a program of the caller's choosing.
func TestPolicyGitRunsNoProgramsWhileProgramsAreRestricted(t *testing.T) {
	s := startServer(t, testConfig(t))
	root := t.TempDir()
	gitInit(t, root)
	os.Symlink(".git", filepath.Join(root, "gitdir")) // a link to the repository's directory
	os.MkdirAll(filepath.Join(root, "hooks"), 0o755)
	os.WriteFile(filepath.Join(root, "hooks", "pre-commit"), []byte("#!/bin/sh\ntouch ran\n"), 0o755)
	_, prefix := policyAgent(t, s, "nogithooks", root, `{"exec": false, "processes": false}`)
	_, cmdPrefix := policyAgent(t, s, "cmdgithooks", root, `{"commands": ["echo"]}`)
	hook := "#!/bin/sh\ntouch " + filepath.Join(root, "pwned") + "\n"
	cases := []policyCase{
		{name: "write a hook", method: "PUT", path: q("/fs/file", "path", ".git/hooks/pre-commit", "mode", "0755"), body: hook, rule: "exec"},
		{name: "write the config", method: "PUT", path: q("/fs/file", "path", ".git/config"), body: "[core]\n\tfsmonitor = touch pwned\n", rule: "exec"},
		{name: "write via a link", method: "PUT", path: q("/fs/file", "path", "gitdir/hooks/post-commit", "mode", "0755"), body: hook, rule: "exec"},
		{name: "a .git file elsewhere", method: "PUT", path: q("/fs/file", "path", "sub/.git"), body: "gitdir: ../evil\n", rule: "exec"},
		{name: "move hooks into place", method: "POST", path: "/fs/move", body: map[string]any{"from": "hooks", "to": ".git/hooks2"}, rule: "exec"},
		{name: "mkdir", method: "POST", path: "/fs/mkdir", body: map[string]any{"path": "sub/.git"}, rule: "exec"},
		{name: "unpack an entry into .git", method: "PUT", path: q("/fs/archive", "path", "."), body: tarOf(t, [2]string{".git/hooks/pre-commit", hook}), rule: "exec"},
		{name: "unpack a nested .git", method: "PUT", path: q("/fs/archive", "path", "sub"), body: tarOf(t, [2]string{"x/.git/config", "[core]\n"}), rule: "exec"},
		{name: "other files still written", method: "PUT", path: q("/fs/file", "path", "notes.txt"), body: "ok", wantStatus: 200},
		{name: "reading .git is fine", method: "GET", path: q("/fs/file", "path", ".git/HEAD"), wantStatus: 200},
	}
	runPolicyCases(t, s, prefix, cases)
	for i := range cases {
		if cases[i].rule != "" {
			cases[i].rule = "commands"
		}
	}
	runPolicyCases(t, s, cmdPrefix, cases)
	if _, err := os.Stat(filepath.Join(root, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("a hook was written")
	}

	// A hook and an fsmonitor program already in the repository (written
	// before the policy was tightened, say) do not run for git ops.
	os.WriteFile(filepath.Join(root, ".git", "hooks", "pre-commit"), []byte(hook), 0o755)
	gitRun(t, root, "config", "core.fsmonitor", "touch "+filepath.Join(root, "fsmonitor-ran"))
	status, body := call(t, s, "GET", prefix+"/git/status", s.AdminToken(), nil)
	if status != 200 {
		t.Fatalf("git status: %d %s", status, body)
	}
	status, body = call(t, s, "POST", prefix+"/git/commit", s.AdminToken(), map[string]any{"message": "m", "includeUntracked": true, "authorName": "t", "authorEmail": "t@t"})
	if status != 201 {
		t.Fatalf("git commit: %d %s", status, body)
	}
	for _, n := range []string{"pwned", "fsmonitor-ran"} {
		if _, err := os.Stat(filepath.Join(root, n)); err == nil {
			t.Errorf("%s exists: git ran a program the repository names", n)
		}
	}
	// A directory laid out like a bare repository (whose config the API
	// could have written) is refused by git rather than used.
	bare := filepath.Join(root, "bare")
	gitRun(t, root, "init", "-q", "--bare", bare)
	status, body = call(t, s, "GET", q(prefix+"/git/log", "path", "bare"), s.AdminToken(), nil)
	if status == 200 || !strings.Contains(string(body), "safe.bareRepository") {
		t.Errorf("git log of a bare-looking directory: %d %s, want git's refusal", status, body)
	}

	// Without the restriction, .git is the caller's to write.
	_, freePrefix := policyAgent(t, s, "freegit", t.TempDir(), `{"tty": false}`)
	runPolicyCases(t, s, freePrefix, []policyCase{
		{name: "write .git/config unrestricted", method: "PUT", path: q("/fs/file", "path", ".git/config"), body: "[core]\n", wantStatus: 200},
	})
}

// A clone from a local repository reads it: one under a denied path is
// denied like any other read of it.
func TestPolicyCloneOfADeniedRepository(t *testing.T) {
	s := startServer(t, testConfig(t))
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "private", "repo"), 0o755)
	gitInit(t, filepath.Join(root, "private", "repo"))
	os.Symlink("private", filepath.Join(root, "open"))
	_, prefix := policyAgent(t, s, "clonedeny", root, `{"denyPaths": ["private"]}`)
	runPolicyCases(t, s, prefix, []policyCase{
		{name: "clone by path", method: "POST", path: "/git/clone", body: map[string]any{"url": "private/repo", "path": "copy1"}, rule: "denyPaths"},
		{name: "clone by file URL", method: "POST", path: "/git/clone", body: map[string]any{"url": "file:///private/repo", "path": "copy2"}, rule: "denyPaths"},
		{name: "clone via a link", method: "POST", path: "/git/clone", body: map[string]any{"url": "open/repo", "path": "copy3"}, rule: "denyPaths"},
	})
	for _, n := range []string{"copy1", "copy2", "copy3"} {
		if _, err := os.Stat(filepath.Join(root, n)); err == nil {
			t.Errorf("%s was cloned from a denied repository", n)
		}
	}
}

// With commands restricted, a PATH directory under the root would let a
// file written through the API run under an allowed name: commands are
// refused until the owner denies that directory or makes fs read-only.
func TestPolicyCommandsPathUnderTheRoot(t *testing.T) {
	s := startServer(t, testConfig(t))
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	os.MkdirAll(bin, 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	_, prefix := policyAgent(t, s, "pathroot", root, `{"commands": ["echo"]}`)
	_, deniedPrefix := policyAgent(t, s, "pathdenied", root, `{"commands": ["echo"], "denyPaths": ["bin"]}`)
	_, roPrefix := policyAgent(t, s, "pathro", root, `{"commands": ["echo"], "fs": "read-only"}`)
	ex := map[string]any{"argv": []string{"echo", "hi"}}
	runPolicyCases(t, s, prefix, []policyCase{
		{name: "exec", method: "POST", path: "/exec", body: ex, rule: "commands"},
		{name: "process", method: "POST", path: "/processes", body: ex, rule: "commands"},
		// What the refusal stops: a lookalike written into bin.
		{name: "the write is still allowed", method: "PUT", path: q("/fs/file", "path", "bin/echo", "mode", "0755"), body: "#!/bin/sh\necho fake\n", wantStatus: 200},
		{name: "and would not run", method: "POST", path: "/exec", body: ex, rule: "commands"},
	})
	os.Remove(filepath.Join(bin, "echo"))
	runPolicyCases(t, s, deniedPrefix, []policyCase{
		{name: "bin denied: exec", method: "POST", path: "/exec", body: ex, wantStatus: 200},
		{name: "bin denied: no lookalike", method: "PUT", path: q("/fs/file", "path", "bin/echo"), body: "x", rule: "denyPaths"},
	})
	runPolicyCases(t, s, roPrefix, []policyCase{
		{name: "read-only: exec", method: "POST", path: "/exec", body: ex, wantStatus: 200},
	})
}
