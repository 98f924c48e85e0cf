package controlplane

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

func TestGitBranchesCheckout(t *testing.T) {
	e := newFilesEnv(t)
	ctx := context.Background()
	dir := filepath.Join(e.root, "repo")
	writeFile(t, filepath.Join(dir, "a.txt"), "1", 0o644)
	gitIn(t, dir, "init", "-q")
	gitIn(t, dir, "add", "a.txt")
	gitIn(t, dir, "commit", "-q", "-m", "one")

	b, err := e.tgt.GitCreateBranch(ctx, client.GitBranchCreateRequest{Path: "repo", Name: "feature/x"})
	if err != nil || b.Name != "feature/x" || len(b.OID) < 40 {
		t.Fatalf("create = %+v, %v", b, err)
	}
	_, err = e.tgt.GitCreateBranch(ctx, client.GitBranchCreateRequest{Path: "repo", Name: "feature/x"})
	wantCode(t, err, wire.CodeConflict, wire.ReasonAlreadyExists)
	_, err = e.tgt.GitCreateBranch(ctx, client.GitBranchCreateRequest{Path: "repo", Name: "--force"})
	wantCode(t, err, wire.CodeInvalidArgument, "")

	st, err := e.tgt.GitCheckout(ctx, client.GitCheckoutRequest{Path: "repo", Ref: "feature/x"})
	if err != nil || st.Branch.Head != "feature/x" {
		t.Fatalf("checkout = %+v, %v", st, err)
	}
	writeFile(t, filepath.Join(dir, "b.txt"), "2", 0o644)
	gitIn(t, dir, "add", "b.txt")
	gitIn(t, dir, "commit", "-q", "-m", "two")
	writeFile(t, filepath.Join(dir, "a.txt"), "changed", 0o644)
	gitIn(t, dir, "commit", "-q", "-am", "three")
	writeFile(t, filepath.Join(dir, "a.txt"), "local", 0o644)
	_, err = e.tgt.GitCheckout(ctx, client.GitCheckoutRequest{Path: "repo", Ref: "main"})
	wantCode(t, err, wire.CodeConflict, wire.ReasonLocalChanges)
	gitIn(t, dir, "checkout", "a.txt")
	if st, err = e.tgt.GitCheckout(ctx, client.GitCheckoutRequest{Path: "repo", Ref: "main"}); err != nil || st.Branch.Head != "main" {
		t.Fatalf("checkout main = %+v, %v", st, err)
	}
	status, body := call(t, e.s, "POST", e.path+"/git/checkout", e.s.AdminToken(), `{"path":"repo","ref":"topic","create":true}`)
	if status != 200 || !strings.Contains(string(body), `"head":"topic"`) {
		t.Fatalf("checkout create: %d %s", status, body)
	}
	_, err = e.tgt.GitCheckout(ctx, client.GitCheckoutRequest{Path: "repo", Ref: "nope"})
	wantCode(t, err, wire.CodeNotFound, "")

	bs, err := e.tgt.GitBranches(ctx, "repo")
	if err != nil || bs.Current != "topic" || len(bs.Branches) != 3 {
		t.Fatalf("branches = %+v, %v", bs, err)
	}
	err = e.tgt.GitDeleteBranch(ctx, "repo", "feature/x", false)
	wantCode(t, err, wire.CodeConflict, wire.ReasonNotMerged)
	status, body = call(t, e.s, "DELETE", e.path+"/git/branches/feature/x?path=repo&force=true", e.s.AdminToken(), nil)
	if status != 204 {
		t.Fatalf("delete with force: %d %s", status, body)
	}
	err = e.tgt.GitDeleteBranch(ctx, "repo", "feature/x", true)
	wantCode(t, err, wire.CodeNotFound, "")
	err = e.tgt.GitDeleteBranch(ctx, "repo", "topic", true)
	wantCode(t, err, wire.CodeConflict, "")
}
