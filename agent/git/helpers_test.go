package git

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testTimeout bounds each git test.
const testTimeout = 30 * time.Second

// newGit returns a Git isolated from the machine's configuration, with a
// fixed identity, and a context for the test.
func newGit(t testing.TB) (context.Context, *Git) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is required: %v", err)
	}
	home := t.TempDir()
	g := &Git{Env: []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig"),
		"GIT_AUTHOR_NAME=Test Author", "GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Test Committer", "GIT_COMMITTER_EMAIL=committer@example.com",
	}}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx, g
}

// newRepo makes an empty repository on branch main in a new directory.
func newRepo(t testing.TB, ctx context.Context, g *Git) string {
	t.Helper()
	dir := t.TempDir()
	mustGit(t, ctx, g, dir, "-c", "init.defaultBranch=main", "init", "-q")
	return dir
}

// mustGit runs git in dir and returns its stdout; failure ends the test.
func mustGit(t testing.TB, ctx context.Context, g *Git, dir string, args ...string) string {
	t.Helper()
	res, err := g.run(ctx, call{dir: dir, args: args})
	if err != nil || res.code != 0 {
		t.Fatalf("git %v: %v exit %d: %s", args, err, res.code, res.stderr)
	}
	return string(res.stdout)
}

// writeFiles writes name → content under dir, creating parents.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// commitFiles writes files, stages everything and commits.
func commitFiles(t testing.TB, ctx context.Context, g *Git, dir, msg string, files map[string]string) {
	t.Helper()
	writeFiles(t, dir, files)
	mustGit(t, ctx, g, dir, "add", "-A")
	mustGit(t, ctx, g, dir, "commit", "-q", "-m", msg)
}

// kindNames name the kinds of error (see ErrNotRepository) in test tables.
var kindNames = map[error]string{
	ErrNoGit:                 "no_git",
	ErrNotRepository:         "not_repository",
	ErrUnknownRevision:       "unknown_revision",
	ErrPatchFailed:           "patch_failed",
	ErrNothingToCommit:       "nothing_to_commit",
	ErrUnmerged:              "unmerged",
	ErrCommitRefused:         "commit_refused",
	ErrOutputTooLarge:        "output_too_large",
	ErrNotMerged:             "not_merged",
	ErrBranchInUse:           "branch_in_use",
	ErrLocalChanges:          "local_changes",
	os.ErrExist:              "exist",
	ErrOutsideRoot:           "outside_root",
	ErrCredentials:           "credentials",
	ErrPushRejected:          "push_rejected",
	ErrMergeConflict:         "merge_conflict",
	ErrRemoteNotFound:        "remote_not_found",
	ErrUnreachable:           "unreachable",
	os.ErrInvalid:            "invalid",
	os.ErrNotExist:           "not_exist",
	context.DeadlineExceeded: "deadline_exceeded",
	context.Canceled:         "canceled",
}

// kindOf names the kind of err: "" for nil, "no kind" for an error of none
// (which the agent reports as internal).
func kindOf(err error) string {
	if err == nil {
		return ""
	}
	var ke *kindError
	if !errors.As(err, &ke) || ke.kind == nil {
		return "no kind"
	}
	if n, ok := kindNames[ke.kind]; ok {
		return n
	}
	return "unknown kind: " + ke.kind.Error()
}

// lines is a multi-line text file.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// readFile returns the content of name under dir.
func readFile(t testing.TB, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
