package controlplane

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// gitIn runs git in dir with a fixed identity and no user configuration.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(home, "gc"),
		"GIT_AUTHOR_NAME=Setup", "GIT_AUTHOR_EMAIL=setup@example.com",
		"GIT_COMMITTER_NAME=Setup", "GIT_COMMITTER_EMAIL=setup@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// findEntry returns the status entry of path.
func findEntry(st *client.GitStatus, path string) *client.GitStatusEntry {
	for i := range st.Entries {
		if st.Entries[i].Path == path {
			return &st.Entries[i]
		}
	}
	return nil
}

func TestGitCalls(t *testing.T) {
	e := newFilesEnv(t)
	ctx := context.Background()
	me := client.GitCommitRequest{AuthorName: "Ada", AuthorEmail: "ada@example.com"}

	t.Run("not a repository", func(t *testing.T) {
		writeFile(t, filepath.Join(e.root, "plain", "x.txt"), "x", 0o644)
		st, err := e.tgt.GitStatus(ctx, "plain")
		if err != nil || st.IsRepo || len(st.Entries) != 0 {
			t.Fatalf("status = %+v, %v", st, err)
		}
		status, body := call(t, e.s, "GET", e.path+"/git/status?path=plain", e.s.AdminToken(), nil)
		if status != 200 || !strings.Contains(string(body), `"isRepo":false`) {
			t.Fatalf("%d %s", status, body)
		}
		_, err = e.tgt.GitDiff(ctx, client.GitDiffOptions{Path: "plain"})
		wantCode(t, err, wire.CodeNotFound, "")
		_, err = e.tgt.GitStatus(ctx, "missing")
		wantCode(t, err, wire.CodeNotFound, "")
	})

	t.Run("unborn head", func(t *testing.T) {
		dir := filepath.Join(e.root, "unborn")
		writeFile(t, filepath.Join(dir, "first.txt"), "one\ntwo\n", 0o644)
		gitIn(t, dir, "init", "-q")
		gitIn(t, dir, "add", "first.txt")
		st, err := e.tgt.GitStatus(ctx, "unborn")
		if err != nil || !st.IsRepo || !st.Branch.Unborn || st.Branch.Head != "main" || st.Branch.OID != "" {
			t.Fatalf("status = %+v, %v", st, err)
		}
		if en := findEntry(st, "first.txt"); en == nil || en.Kind != "changed" || en.Index != "A" {
			t.Fatalf("entries %+v", st.Entries)
		}
		d, err := e.tgt.GitDiff(ctx, client.GitDiffOptions{Path: "unborn", Staged: true})
		if err != nil || len(d.Files) != 1 || d.Files[0].Path != "first.txt" || d.Files[0].Added != 2 || !strings.Contains(d.Patch, "+two") {
			t.Fatalf("staged diff on unborn HEAD = %+v, %v", d, err)
		}
		log, err := e.tgt.GitLog(ctx, "unborn", 0)
		if err != nil || len(log) != 0 {
			t.Fatalf("log = %+v, %v", log, err)
		}
		req := me
		req.Path, req.Message = "unborn", "first commit\n\nbody"
		c, err := e.tgt.GitCommit(ctx, req)
		if err != nil || len(c.OID) < 40 || c.Summary != "first commit" {
			t.Fatalf("commit = %+v, %v", c, err)
		}
		log, err = e.tgt.GitLog(ctx, "unborn", 5)
		if err != nil || len(log) != 1 || log[0].OID != c.OID || log[0].Author != "Ada" || log[0].Email != "ada@example.com" || log[0].Subject != "first commit" || log[0].Time.IsZero() {
			t.Fatalf("log = %+v, %v", log, err)
		}
		status, body := call(t, e.s, "POST", e.path+"/git/commit", e.s.AdminToken(), `{"path":"unborn","message":"again","authorName":"A","authorEmail":"a@x"}`)
		if status != 409 {
			t.Fatalf("nothing to commit: %d %s", status, body)
		}
	})

	repo := filepath.Join(e.root, "repo")
	writeFile(t, filepath.Join(repo, "a.txt"), strings.Repeat("line\n", 20), 0o644)
	writeFile(t, filepath.Join(repo, "img.bin"), "\x00\x01\x02binary", 0o644)
	writeFile(t, filepath.Join(repo, "conf.txt"), "base\n", 0o644)
	writeFile(t, filepath.Join(repo, ".gitignore"), "*.log\n", 0o644)
	gitIn(t, repo, "init", "-q")
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-qm", "base")

	t.Run("renamed binary untracked ignored", func(t *testing.T) {
		gitIn(t, repo, "mv", "a.txt", "b.txt")
		writeFile(t, filepath.Join(repo, "img.bin"), "\x00\x09\x08changed", 0o644)
		writeFile(t, filepath.Join(repo, "new.txt"), "new\n", 0o644)
		writeFile(t, filepath.Join(repo, "debug.log"), "log\n", 0o644)
		st, err := e.tgt.GitStatus(ctx, "repo")
		if err != nil {
			t.Fatal(err)
		}
		if en := findEntry(st, "b.txt"); en == nil || en.Kind != "renamed" || en.OrigPath != "a.txt" || en.Index != "R" {
			t.Fatalf("rename: %+v", st.Entries)
		}
		if en := findEntry(st, "img.bin"); en == nil || en.Kind != "changed" || en.Worktree != "M" {
			t.Fatalf("binary: %+v", st.Entries)
		}
		if en := findEntry(st, "new.txt"); en == nil || en.Kind != "untracked" {
			t.Fatalf("untracked: %+v", st.Entries)
		}
		status, body := call(t, e.s, "GET", e.path+"/git/status?path=repo&ignored=true", e.s.AdminToken(), nil)
		if status != 200 || !strings.Contains(string(body), `"kind":"ignored"`) || !strings.Contains(string(body), `"origPath":"a.txt"`) {
			t.Fatalf("%d %s", status, body)
		}
		d, err := e.tgt.GitDiff(ctx, client.GitDiffOptions{Path: "repo"})
		if err != nil || len(d.Files) != 1 || d.Files[0].Path != "img.bin" || !d.Files[0].Binary || !strings.Contains(d.Patch, "Binary files") {
			t.Fatalf("worktree diff = %+v, %v", d, err)
		}
		d, err = e.tgt.GitDiff(ctx, client.GitDiffOptions{Path: "repo", Staged: true})
		if err != nil || len(d.Files) != 1 || d.Files[0].Path != "b.txt" || d.Files[0].OldPath != "a.txt" {
			t.Fatalf("staged diff = %+v, %v", d, err)
		}
		d, err = e.tgt.GitDiff(ctx, client.GitDiffOptions{Path: "repo", Ref: "HEAD"})
		if err != nil || len(d.Files) != 2 {
			t.Fatalf("diff against HEAD = %+v, %v", d, err)
		}
		_, err = e.tgt.GitDiff(ctx, client.GitDiffOptions{Path: "repo", Ref: "no-such-ref"})
		wantCode(t, err, wire.CodeNotFound, "")
		req := me
		req.Path, req.Message, req.All = "repo", "rename and binary", true
		if _, err := e.tgt.GitCommit(ctx, req); err != nil {
			t.Fatal(err)
		}
		st, _ = e.tgt.GitStatus(ctx, "repo")
		if len(st.Entries) != 1 || st.Entries[0].Path != "new.txt" {
			t.Fatalf("after commit -a: %+v", st.Entries)
		}
		log, err := e.tgt.GitLog(ctx, "repo", 1)
		if err != nil || len(log) != 1 || log[0].Subject != "rename and binary" {
			t.Fatalf("log n=1 = %+v, %v", log, err)
		}
	})

	t.Run("apply", func(t *testing.T) {
		writeFile(t, filepath.Join(repo, "conf.txt"), "base\nmore\n", 0o644)
		patch := gitIn(t, repo, "diff", "conf.txt")
		gitIn(t, repo, "checkout", "--", "conf.txt")
		res, err := e.tgt.GitApply(ctx, client.GitApplyRequest{Path: "repo", Patch: patch, Check: true})
		if err != nil || res.Applied {
			t.Fatalf("check = %+v, %v", res, err)
		}
		if b, _ := os.ReadFile(filepath.Join(repo, "conf.txt")); string(b) != "base\n" {
			t.Fatalf("check changed the file: %q", b)
		}
		res, err = e.tgt.GitApply(ctx, client.GitApplyRequest{Path: "repo", Patch: patch, Index: true})
		if err != nil || !res.Applied {
			t.Fatalf("apply = %+v, %v", res, err)
		}
		st, _ := e.tgt.GitStatus(ctx, "repo")
		if en := findEntry(st, "conf.txt"); en == nil || en.Index != "M" {
			t.Fatalf("apply --index did not stage: %+v", st.Entries)
		}
		// The same patch again does not apply: 409 with git's message.
		status, body := call(t, e.s, "POST", e.path+"/git/apply", e.s.AdminToken(), client.GitApplyRequest{Path: "repo", Patch: patch})
		if code, _ := errorCode(t, body); status != 409 || code != wire.CodeConflict || !strings.Contains(string(body), "patch does not apply") {
			t.Fatalf("%d %s", status, body)
		}
		status, _ = call(t, e.s, "POST", e.path+"/git/apply", e.s.AdminToken(), `{"path":"repo","patch":""}`)
		if status != 400 {
			t.Fatalf("empty patch: %d", status)
		}
		req := me
		req.Path, req.Message = "repo", "more"
		if _, err := e.tgt.GitCommit(ctx, req); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("conflict", func(t *testing.T) {
		// A patch made against another version of conf.txt: three-way
		// apply leaves conflict markers and unmerged status.
		gitIn(t, repo, "checkout", "-q", "-b", "other", "HEAD~1")
		writeFile(t, filepath.Join(repo, "conf.txt"), "base\nother\n", 0o644)
		gitIn(t, repo, "commit", "-qam", "other")
		patch := gitIn(t, repo, "diff", "HEAD~1", "HEAD")
		gitIn(t, repo, "checkout", "-q", "main")
		_, err := e.tgt.GitApply(ctx, client.GitApplyRequest{Path: "repo", Patch: patch, ThreeWay: true})
		wantCode(t, err, wire.CodeConflict, "")
		st, err := e.tgt.GitStatus(ctx, "repo")
		if err != nil {
			t.Fatal(err)
		}
		if en := findEntry(st, "conf.txt"); en == nil || en.Kind != "unmerged" {
			t.Fatalf("want conf.txt unmerged: %+v", st.Entries)
		}
		req := me
		req.Path, req.Message, req.All = "repo", "with conflict", true
		_, err = e.tgt.GitCommit(ctx, req)
		wantCode(t, err, wire.CodeConflict, "")
	})

	t.Run("bad queries", func(t *testing.T) {
		for _, p := range []string{"/git/log?path=repo&n=x", "/git/log?path=repo&n=-1", "/git/diff?path=repo&staged=x", "/git/diff?path=repo&ref=--output=/tmp/x"} {
			if status, body := call(t, e.s, "GET", e.path+p, e.s.AdminToken(), nil); status != 400 {
				t.Errorf("%s: %d %s", p, status, body)
			}
		}
	})
}
