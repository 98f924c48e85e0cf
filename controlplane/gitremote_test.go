package controlplane

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// TestGitRemote runs clone, fetch, pull and push through the API against a
// bare repository under the agent's root, and the failures API.md names.
func TestGitRemote(t *testing.T) {
	e := newFilesEnv(t)
	ctx := context.Background()
	seed := filepath.Join(e.root, "seed")
	writeFile(t, filepath.Join(seed, "a.txt"), "1\n", 0o644)
	gitIn(t, seed, "init", "-q")
	gitIn(t, seed, "add", "a.txt")
	gitIn(t, seed, "commit", "-q", "-m", "one")
	gitIn(t, e.root, "clone", "-q", "--bare", "seed", "remotes/origin.git")

	res, err := e.tgt.GitClone(ctx, client.GitCloneRequest{URL: "file:///remotes/origin.git", Path: "work/one"})
	if err != nil {
		t.Fatalf("clone by file URL = %+v, %v", res, err)
	}
	status, body := call(t, e.s, "POST", e.path+"/git/clone", e.s.AdminToken(), `{"url":"remotes/origin.git","path":"work/two","ref":"main","depth":1}`)
	if status != 201 || !strings.Contains(string(body), `"summary"`) {
		t.Fatalf("clone by path: %d %s", status, body)
	}
	one, two := filepath.Join(e.root, "work", "one"), filepath.Join(e.root, "work", "two")

	// one pushes a commit; two pulls it.
	writeFile(t, filepath.Join(one, "a.txt"), "2\n", 0o644)
	gitIn(t, one, "commit", "-q", "-am", "two")
	if res, err = e.tgt.GitPush(ctx, client.GitRemoteRequest{Path: "work/one"}); err != nil || !strings.Contains(res.Summary, "main -> main") {
		t.Fatalf("push = %+v, %v", res, err)
	}
	if _, err = e.tgt.GitFetch(ctx, client.GitRemoteRequest{Path: "work/two", Remote: "origin"}); err != nil {
		t.Fatalf("fetch = %v", err)
	}
	if st, err := e.tgt.GitStatus(ctx, "work/two"); err != nil || st.Branch.Behind != 1 {
		t.Fatalf("status after fetch = %+v, %v", st, err)
	}
	if _, err = e.tgt.GitPull(ctx, client.GitRemoteRequest{Path: "work/two"}); err != nil {
		t.Fatalf("pull = %v", err)
	}
	// Diverge: two's push is rejected, its pull conflicts.
	writeFile(t, filepath.Join(one, "a.txt"), "one\n", 0o644)
	gitIn(t, one, "commit", "-q", "-am", "one three")
	writeFile(t, filepath.Join(two, "a.txt"), "two\n", 0o644)
	gitIn(t, two, "commit", "-q", "-am", "two three")
	if _, err = e.tgt.GitPush(ctx, client.GitRemoteRequest{Path: "work/one", Remote: "origin", Ref: "main"}); err != nil {
		t.Fatalf("push one = %v", err)
	}
	_, err = e.tgt.GitPush(ctx, client.GitRemoteRequest{Path: "work/two"})
	wantCode(t, err, wire.CodeConflict, wire.ReasonPushRejected)
	status, body = call(t, e.s, "POST", e.path+"/git/pull", e.s.AdminToken(), `{"path":"work/two"}`)
	if status != 409 || !strings.Contains(string(body), wire.ReasonMergeConflict) || !strings.Contains(string(body), "a.txt") {
		t.Fatalf("conflicting pull: %d %s", status, body)
	}
	st, err := e.tgt.GitStatus(ctx, "work/two")
	if en := findEntryOf(st, "a.txt"); err != nil || en == nil || en.Kind != "unmerged" {
		t.Fatalf("status after the conflict = %+v, %v", st, err)
	}
	// A new branch pushed with setUpstream.
	gitIn(t, one, "checkout", "-q", "-b", "topic")
	if _, err = e.tgt.GitPush(ctx, client.GitRemoteRequest{Path: "work/one", SetUpstream: true}); err != nil {
		t.Fatalf("push -u = %v", err)
	}
	if st, err := e.tgt.GitStatus(ctx, "work/one"); err != nil || st.Branch.Upstream != "origin/topic" {
		t.Fatalf("status after push -u = %+v, %v", st, err)
	}

	outside := t.TempDir()
	gitIn(t, outside, "init", "-q", "--bare", "x.git")
	for _, tc := range []struct {
		path, body, code, reason string
	}{
		{"/git/clone", `{"url":"ext::sh -c touch% /tmp/outpost-pwned","path":"c1"}`, "invalid_argument", ""},
		{"/git/clone", `{"url":"-uhack","path":"c1"}`, "invalid_argument", ""},
		{"/git/clone", `{"url":"file::remotes/origin.git","path":"c1"}`, "invalid_argument", ""},
		{"/git/clone", `{"url":"http://127.0.0.1:1/x","path":"c1"}`, "invalid_argument", ""},
		{"/git/clone", `{"url":"../` + filepath.Base(outside) + `/x.git","path":"c1"}`, "permission_denied", wire.ReasonOutsideRoot},
		{"/git/clone", `{"url":"file://` + outside + `/x.git","path":"c1"}`, "not_found", ""},
		{"/git/clone", `{"url":"remotes/origin.git","path":"../c1"}`, "permission_denied", wire.ReasonOutsideRoot},
		{"/git/clone", `{"url":"remotes/origin.git","path":"work/one"}`, "conflict", wire.ReasonAlreadyExists},
		{"/git/clone", `{"url":"remotes/origin.git","path":"c1","ref":"--upload-pack=x"}`, "invalid_argument", ""},
		{"/git/fetch", `{"path":"work/one","remote":"origin","ref":"-x"}`, "invalid_argument", ""},
		{"/git/fetch", `{"path":"work/one","remote":"--upload-pack=x"}`, "invalid_argument", ""},
		{"/git/fetch", `{"path":"work/one","remote":"ext::x"}`, "invalid_argument", ""},
		{"/git/push", `{"path":"work/one","remote":"nope"}`, "not_found", ""},
		{"/git/clone", `{"url":"https://127.0.0.1:1/x.git","path":"c1"}`, "unavailable", wire.ReasonRemoteUnreachable},
		{"/git/push", `{"path":"work/one","force":true}`, "invalid_argument", wire.ReasonUnknownField},
	} {
		status, body := call(t, e.s, "POST", e.path+tc.path, e.s.AdminToken(), tc.body)
		if status != wire.HTTPStatus(wire.Code(tc.code)) || !strings.Contains(string(body), `"reason":"`+tc.reason) {
			t.Errorf("%s %s: %d %s, want %s %s", tc.path, tc.body, status, body, tc.code, tc.reason)
		}
	}
	if _, err := os.Stat(filepath.Join(e.root, "c1")); !os.IsNotExist(err) {
		t.Errorf("a refused clone left c1: %v", err)
	}
	if _, err := os.Stat("/tmp/outpost-pwned"); err == nil {
		t.Error("/tmp/outpost-pwned exists")
	}
	gitIn(t, one, "remote", "add", "evil", filepath.Join(outside, "x.git"))
	_, err = e.tgt.GitFetch(ctx, client.GitRemoteRequest{Path: "work/one", Remote: "evil"})
	wantCode(t, err, wire.CodePermissionDenied, wire.ReasonOutsideRoot)
}

// TestGitRemoteCredentials: an https remote (loopback) answering 401 is
// 401 git_credentials, at once: git never prompts.
func TestGitRemoteCredentials(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="outpost-test"`)
		http.Error(w, "credentials needed", http.StatusUnauthorized)
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_SSL_CAINFO", ca) // the in-process agent's git trusts the test server
	e := newFilesEnv(t)
	_, err := e.tgt.GitClone(context.Background(), client.GitCloneRequest{URL: srv.URL + "/repo.git", Path: "c"})
	wantCode(t, err, wire.CodeUnauthenticated, wire.ReasonGitCredentials)
}
