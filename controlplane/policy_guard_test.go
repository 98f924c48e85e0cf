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

// A git checkout or pull that would change a file under a denied path (a
// branch that rewrites .env, a merge that adds .ssh/authorized_keys) is
// refused before it writes anything; one that changes only allowed files
// still runs; a clone likewise. With fs or git read-only, all are refused
// outright.
func TestPolicyGitWorkTreeWritesUnderDeniedPaths(t *testing.T) {
	s := startServer(t, testConfig(t))
	root := t.TempDir()
	up := filepath.Join(root, "up")
	os.MkdirAll(up, 0o755)
	gitInit(t, up)
	commit := func(dir, msg string, files map[string]string) {
		t.Helper()
		for name, text := range files {
			os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
			os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
		}
		gitRun(t, dir, "add", "-A")
		gitRun(t, dir, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", msg)
	}
	commit(up, "base", map[string]string{".env": "ORIG", "app.txt": "v1", "sub/.env": "ORIG"})
	trunk := strings.TrimSpace(gitOut(t, up, "rev-parse", "--abbrev-ref", "HEAD"))
	branch := func(name string, files map[string]string) {
		t.Helper()
		gitRun(t, up, "checkout", "-q", "-b", name, trunk)
		commit(up, name, files)
		gitRun(t, up, "checkout", "-q", trunk)
	}
	branch("evil-env", map[string]string{".env": "EVIL", "app.txt": "v2"})
	branch("evil-ssh", map[string]string{".ssh/authorized_keys": "ssh-ed25519 EVIL"})
	branch("evil-nested", map[string]string{"sub/.env": "EVIL"})
	branch("good", map[string]string{"app.txt": "good"})
	gitRun(t, root, "clone", "-q", "up", "proj")
	proj := filepath.Join(root, "proj")
	gitRun(t, proj, "checkout", "-q", "-b", "good", "origin/good") // a local branch
	gitRun(t, proj, "checkout", "-q", trunk)

	_, prefix := policyAgent(t, s, "gitwt", root, `{"denyPaths": ["proj/.env", "**/.ssh", "**/sub/.env"]}`)
	co := func(ref string) map[string]any { return map[string]any{"path": "proj", "ref": ref} }
	pull := func(ref string) map[string]any { return map[string]any{"path": "proj", "remote": "origin", "ref": ref} }
	runPolicyCases(t, s, prefix, []policyCase{
		{name: "checkout a branch rewriting .env", method: "POST", path: "/git/checkout", body: co("origin/evil-env"), rule: "denyPaths"},
		{name: "checkout a remote branch by name (a new tracking branch)", method: "POST", path: "/git/checkout", body: co("evil-env"), rule: "denyPaths"},
		{name: "checkout adding .ssh/authorized_keys", method: "POST", path: "/git/checkout", body: co("origin/evil-ssh"), rule: "denyPaths"},
		{name: "checkout changing a nested denied file", method: "POST", path: "/git/checkout", body: co("origin/evil-nested"), rule: "denyPaths"},
		{name: "pull merging a change to .env", method: "POST", path: "/git/pull", body: pull("evil-env"), rule: "denyPaths"},
		{name: "pull merging .ssh/authorized_keys", method: "POST", path: "/git/pull", body: pull("evil-ssh"), rule: "denyPaths"},
		{name: "checkout of allowed changes", method: "POST", path: "/git/checkout", body: co("good"), wantStatus: 200},
		{name: "and back", method: "POST", path: "/git/checkout", body: co(trunk), wantStatus: 200},
		{name: "checkout of a revision (detached)", method: "POST", path: "/git/checkout", body: co(trunk + "@{upstream}"), wantStatus: 200},
		{name: "and back again", method: "POST", path: "/git/checkout", body: co(trunk), wantStatus: 200},
		{name: "pull of allowed changes", method: "POST", path: "/git/pull", body: pull("good"), wantStatus: 200},
	})
	for name, want := range map[string]string{".env": "ORIG", "sub/.env": "ORIG", "app.txt": "good"} {
		if got, err := os.ReadFile(filepath.Join(proj, name)); err != nil || string(got) != want {
			t.Errorf("proj/%s is %q (%v), want %q", name, got, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(proj, ".ssh")); err == nil {
		t.Error("proj/.ssh was written by a denied git op")
	}
	if head := strings.TrimSpace(gitOut(t, proj, "rev-parse", "--abbrev-ref", "HEAD")); head != trunk {
		t.Errorf("proj is on %q after the denied checkouts, want %q", head, trunk)
	}
	if st := gitOut(t, proj, "status", "--porcelain"); st != "" {
		t.Errorf("proj's work tree changed: %s", st)
	}
	if _, err := os.Lstat(filepath.Join(proj, ".git", "MERGE_HEAD")); err == nil {
		t.Error("a denied pull left a merge under way")
	}
	// A plain pull (the branch's upstream, what git marks for merge) is
	// checked the same way.
	commit(up, "upstream", map[string]string{".env": "UPSTREAM"})
	runPolicyCases(t, s, prefix, []policyCase{
		{name: "pull of the upstream changing .env", method: "POST", path: "/git/pull", body: map[string]any{"path": "proj"}, rule: "denyPaths"},
	})
	gitRun(t, up, "reset", "-q", "--hard", "HEAD~1")
	commit(up, "upstream", map[string]string{"other.txt": "upstream"})
	runPolicyCases(t, s, prefix, []policyCase{
		{name: "pull of the upstream changing allowed files", method: "POST", path: "/git/pull", body: map[string]any{"path": "proj"}, wantStatus: 200},
	})
	if got, _ := os.ReadFile(filepath.Join(proj, ".env")); string(got) != "ORIG" {
		t.Errorf("proj/.env is %q after the upstream pulls", got)
	}
	if got, _ := os.ReadFile(filepath.Join(proj, "other.txt")); string(got) != "upstream" {
		t.Errorf("proj/other.txt is %q after the allowed upstream pull, want the upstream's", got)
	}
	if subject := gitOut(t, proj, "log", "-1", "--format=%s"); !strings.HasPrefix(subject, "Merge branch '"+trunk+"' of ") {
		t.Errorf("the pull's merge commit says %q, want git pull's message", subject)
	}

	// A clone whose files include a denied one (sub/.env) is refused and
	// leaves nothing behind; a clone of allowed files is made.
	clean := filepath.Join(root, "clean")
	os.MkdirAll(clean, 0o755)
	gitInit(t, clean)
	commit(clean, "clean", map[string]string{"app.txt": "clean"})
	os.MkdirAll(filepath.Join(root, "emptydir"), 0o755)
	runPolicyCases(t, s, prefix, []policyCase{
		{name: "clone with a denied file", method: "POST", path: "/git/clone", body: map[string]any{"url": "up", "path": "copy"}, rule: "denyPaths"},
		{name: "clone with a denied file into an empty directory", method: "POST", path: "/git/clone", body: map[string]any{"url": "up", "path": "emptydir"}, rule: "denyPaths"},
		{name: "clone of allowed files", method: "POST", path: "/git/clone", body: map[string]any{"url": "clean", "path": "copy2"}, wantStatus: 201},
	})
	if _, err := os.Lstat(filepath.Join(root, "copy")); err == nil {
		t.Error("a refused clone left its directory")
	}
	if ents, err := os.ReadDir(filepath.Join(root, "emptydir")); err != nil || len(ents) != 0 {
		t.Errorf("a refused clone into an empty directory left %v (%v)", ents, err)
	}
	if got, err := os.ReadFile(filepath.Join(root, "copy2", "app.txt")); err != nil || string(got) != "clean" {
		t.Errorf("copy2/app.txt is %q (%v) after the allowed clone", got, err)
	}
	if st := gitOut(t, filepath.Join(root, "copy2"), "status", "--porcelain"); st != "" {
		t.Errorf("the allowed clone's work tree is not clean: %s", st)
	}

	// Read-only fs or git refuse both before anything runs.
	_, roFS := policyAgent(t, s, "gitwtrofs", root, `{"fs": "read-only"}`)
	_, roGit := policyAgent(t, s, "gitwtrogit", root, `{"git": "read-only"}`)
	for _, ro := range []struct{ prefix, rule string }{{roFS, "fs"}, {roGit, "git"}} {
		runPolicyCases(t, s, ro.prefix, []policyCase{
			{name: ro.rule + " read-only: checkout", method: "POST", path: "/git/checkout", body: co("origin/evil-env"), rule: ro.rule},
			{name: ro.rule + " read-only: pull", method: "POST", path: "/git/pull", body: pull("evil-env"), rule: ro.rule},
			{name: ro.rule + " read-only: apply", method: "POST", path: "/git/apply", body: map[string]any{"path": "proj", "patch": "diff --git a/app.txt b/app.txt\n"}, rule: ro.rule},
			{name: ro.rule + " read-only: clone", method: "POST", path: "/git/clone", body: map[string]any{"url": "up", "path": "copy"}, rule: ro.rule},
		})
	}
	if got, _ := os.ReadFile(filepath.Join(proj, ".env")); string(got) != "ORIG" {
		t.Errorf("proj/.env is %q after the read-only refusals", got)
	}
}
