package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// TestGitRemoteCommandsOverBinary drives git add|reset|commit -A|branch|
// checkout|clone|fetch|pull|push through the real binary against a bare
// repository under the agent's root, with their --json, a rejected push and
// extra arguments.
func TestGitRemoteCommandsOverBinary(t *testing.T) {
	e := newAgentEnv(t)
	seed := filepath.Join(e.root, "seed")
	gitIn(t, e.root, "init", "-q", "seed")
	writeRepoFile(t, seed, "a.txt", "one\n")
	gitIn(t, seed, "add", ".")
	gitIn(t, seed, "commit", "-qm", "first")
	gitIn(t, e.root, "clone", "-q", "--bare", "seed", "remotes/origin.git")

	e.cli(t, nil, "git", "clone", "remotes/origin.git", "work")
	var cloned client.GitRemoteResult
	if err := json.Unmarshal([]byte(e.cli(t, nil, "git", "clone", "--json", "--depth", "1", "file:///remotes/origin.git", "other/copy")), &cloned); err != nil {
		t.Fatalf("clone --json: %v", err)
	}
	work, other := filepath.Join(e.root, "work"), filepath.Join(e.root, "other", "copy")
	if b, err := os.ReadFile(filepath.Join(work, "a.txt")); err != nil || string(b) != "one\n" {
		t.Fatalf("cloned a.txt: %q, %v", b, err)
	}

	writeRepoFile(t, work, "new.txt", "n\n")
	if out := e.cli(t, nil, "git", "add", "--repo", "work", "new.txt"); !strings.Contains(out, "A  new.txt") {
		t.Fatalf("add printed %q", out)
	}
	if out := e.cli(t, nil, "git", "reset", "--repo", "work", "new.txt"); !strings.Contains(out, "?? new.txt") {
		t.Fatalf("reset printed %q", out)
	}
	if out := e.cli(t, nil, "git", "commit", "-A", "-m", "second", "--author", "Ada <ada@example.com>", "work"); !strings.Contains(out, "second") {
		t.Fatalf("commit -A printed %q", out)
	}
	if got := gitIn(t, work, "show", "--name-only", "--format=", "HEAD"); got != "new.txt\n" {
		t.Fatalf("files of the commit: %q", got)
	}
	if out := e.cli(t, nil, "git", "push", "--repo", "work"); !strings.Contains(out, "main -> main") {
		t.Fatalf("push printed %q", out)
	}

	if out := e.cli(t, nil, "git", "branch", "--repo", "work", "topic"); !strings.HasPrefix(out, "topic ") {
		t.Fatalf("branch topic printed %q", out)
	}
	if out := e.cli(t, nil, "git", "checkout", "--repo", "work", "topic"); !strings.HasPrefix(out, "## topic") {
		t.Fatalf("checkout printed %q", out)
	}
	e.cli(t, nil, "git", "checkout", "--repo", "work", "-b", "t2")
	e.cli(t, nil, "git", "push", "--repo", "work", "-u")
	var bs client.GitBranches
	if err := json.Unmarshal([]byte(e.cli(t, nil, "git", "branch", "--repo", "work", "--json")), &bs); err != nil || bs.Current != "t2" {
		t.Fatalf("branch --json: %+v, %v", bs, err)
	}
	upstream := ""
	for _, b := range bs.Branches {
		if b.Name == "t2" {
			upstream = b.Upstream
		}
	}
	if upstream != "origin/t2" {
		t.Fatalf("t2's upstream after push -u: %q in %+v", upstream, bs.Branches)
	}
	if list := e.cli(t, nil, "git", "branch", "--repo", "work"); !strings.Contains(list, "* t2") || !strings.Contains(list, "remotes/origin/t2") {
		t.Fatalf("branch list:\n%s", list)
	}
	e.cli(t, nil, "git", "branch", "--repo", "work", "-d", "topic")

	e.cli(t, nil, "git", "fetch", "--repo", "other/copy", "origin")
	e.cli(t, nil, "git", "pull", "--repo", "other/copy")
	if b, err := os.ReadFile(filepath.Join(other, "new.txt")); err != nil || string(b) != "n\n" {
		t.Fatalf("pulled new.txt: %q, %v", b, err)
	}
	if log := e.cli(t, nil, "git", "log", "other/copy"); !strings.Contains(log, "second") {
		t.Fatalf("log after pull:\n%s", log)
	}

	// Diverge: the other copy's push is rejected.
	writeRepoFile(t, other, "a.txt", "other\n")
	gitIn(t, other, "commit", "-qam", "other")
	e.cli(t, nil, "git", "checkout", "--repo", "work", "main")
	writeRepoFile(t, work, "b.txt", "b\n")
	e.cli(t, nil, "git", "add", "--repo", "work", "-A")
	e.cli(t, nil, "git", "commit", "-m", "third", "--author", "Ada <ada@example.com>", "work")
	e.cli(t, nil, "git", "push", "--repo", "work", "origin", "main")
	if _, errOut, err := e.cliErr(nil, "git", "push", "--repo", "other/copy"); exitCode(t, err) != 1 || !strings.Contains(errOut, wire.ReasonPushRejected) {
		t.Fatalf("rejected push: %v, stderr %q", err, errOut)
	}
	if _, errOut, err := e.cliErr(nil, "git", "clone", "ext::sh -c id", "x"); exitCode(t, err) != 1 || !strings.Contains(errOut, "invalid_argument") {
		t.Fatalf("clone of ext::: %v, stderr %q", err, errOut)
	}

	for _, args := range [][]string{
		{"git", "clone", "remotes/origin.git"}, {"git", "clone", "a", "b", "c"},
		{"git", "checkout"}, {"git", "checkout", "a", "b"}, {"git", "branch", "a", "b"},
		{"git", "push", "origin", "main", "extra"}, {"git", "fetch", "a", "b", "c"}, {"git", "pull", "a", "b", "c"},
		{"git", "add", "-A", "x"}, {"git", "reset", "-A", "x"},
	} {
		if _, errOut, err := e.cliErr(nil, args...); exitCode(t, err) != 1 || !strings.Contains(errOut, "argument") {
			t.Errorf("outpost %s: %v, stderr %q; want exit 1 naming the arguments", strings.Join(args, " "), err, errOut)
		}
	}
	if _, errOut, err := e.cliErr(nil, "git", "add"); exitCode(t, err) != 1 || !strings.Contains(errOut, "PATH") {
		t.Errorf("add with nothing: %v, stderr %q", err, errOut)
	}
}
