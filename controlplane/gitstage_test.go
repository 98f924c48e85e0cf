package controlplane

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

func TestGitAddResetCommitUntracked(t *testing.T) {
	e := newFilesEnv(t)
	ctx := context.Background()
	dir := filepath.Join(e.root, "repo")
	writeFile(t, filepath.Join(dir, "a.txt"), "1", 0o644)
	gitIn(t, dir, "init", "-q")
	gitIn(t, dir, "add", "a.txt")
	gitIn(t, dir, "commit", "-q", "-m", "one")
	writeFile(t, filepath.Join(dir, "new.txt"), "n", 0o644)
	writeFile(t, filepath.Join(dir, "b", "c.txt"), "c", 0o644)

	st, err := e.tgt.GitAdd(ctx, client.GitStageRequest{Path: "repo", Paths: []string{"new.txt"}})
	if en := findEntryOf(st, "new.txt"); err != nil || en == nil || en.Index != "A" {
		t.Fatalf("add new.txt = %+v, %v", st, err)
	}
	if en := findEntryOf(st, "b/c.txt"); en == nil || en.Kind != "untracked" {
		t.Fatalf("b/ after add = %+v", st.Entries)
	}
	st, err = e.tgt.GitReset(ctx, client.GitStageRequest{Path: "repo", Paths: []string{"new.txt"}})
	if en := findEntryOf(st, "new.txt"); err != nil || en == nil || en.Kind != "untracked" {
		t.Fatalf("reset new.txt = %+v, %v", st, err)
	}
	status, body := call(t, e.s, "POST", e.path+"/git/add", e.s.AdminToken(), `{"path":"repo","all":true}`)
	if status != 200 || !strings.Contains(string(body), `"path":"b/c.txt","index":"A"`) {
		t.Fatalf("add all: %d %s", status, body)
	}
	gitIn(t, dir, "reset", "-q")

	for _, tc := range []struct{ body, code, reason string }{
		{`{"path":"repo"}`, "invalid_argument", ""},
		{`{"path":"repo","all":true,"paths":["a.txt"]}`, "invalid_argument", ""},
		{`{"path":"repo","paths":["nope.txt"]}`, "not_found", ""},
		{`{"path":"repo","paths":["../../x"]}`, "invalid_argument", ""},
		{`{"path":"../repo","all":true}`, "permission_denied", wire.ReasonOutsideRoot},
		{`{"path":"repo","everything":true}`, "invalid_argument", wire.ReasonUnknownField},
	} {
		status, body := call(t, e.s, "POST", e.path+"/git/add", e.s.AdminToken(), tc.body)
		if status != wire.HTTPStatus(wire.Code(tc.code)) || !strings.Contains(string(body), `"code":"`+tc.code+`"`) ||
			!strings.Contains(string(body), `"reason":"`+tc.reason) {
			t.Errorf("add %s: %d %s, want %s %s", tc.body, status, body, tc.code, tc.reason)
		}
	}

	c, err := e.tgt.GitCommit(ctx, client.GitCommitRequest{Path: "repo", Message: "two", IncludeUntracked: true,
		AuthorName: "Ada", AuthorEmail: "ada@example.com"})
	if err != nil || c.Summary != "two" {
		t.Fatalf("commit includeUntracked = %+v, %v", c, err)
	}
	if got := gitIn(t, dir, "show", "--name-only", "--format=", "HEAD"); got != "b/c.txt\nnew.txt\n" {
		t.Errorf("files of the commit = %q", got)
	}
	if st, err := e.tgt.GitStatus(ctx, "repo"); err != nil || len(st.Entries) != 0 {
		t.Errorf("status after = %+v, %v", st, err)
	}
}

// findEntryOf is findEntry that tolerates a nil status.
func findEntryOf(st *client.GitStatus, path string) *client.GitStatusEntry {
	if st == nil {
		return nil
	}
	return findEntry(st, path)
}
