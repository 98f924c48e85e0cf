package git

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// remoteSetup makes a bare repository "origin.git" holding one commit on
// main, and a clone of it "work", both under one directory that is g's
// ceiling.
func remoteSetup(t *testing.T) (g *Git, base, work string) {
	t.Helper()
	ctx, g := newGit(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g.Ceiling = base
	seed := filepath.Join(base, "seed")
	mustGit(t, ctx, g, base, "-c", "init.defaultBranch=main", "init", "-q", seed)
	commitFiles(t, ctx, g, seed, "one", map[string]string{"a.txt": "1\n"})
	mustGit(t, ctx, g, base, "clone", "-q", "--bare", seed, filepath.Join(base, "origin.git"))
	work = filepath.Join(base, "work")
	out, err := g.Clone(ctx, CloneOptions{URL: filepath.Join(base, "origin.git"), Dest: work})
	if err != nil {
		t.Fatalf("Clone = %q, %v", out, err)
	}
	return g, base, work
}

// The same story with and without a Guard: under one (which allows every
// path here) clone, checkout and pull take their checked paths (a clone
// without a work tree then a checkout; a fetch then a merge of the fetched
// heads) and must end the same, the guard having seen the paths changed.
func TestCloneFetchPullPush(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testCloneFetchPullPush(t, false) })
	t.Run("guarded", func(t *testing.T) { testCloneFetchPullPush(t, true) })
}

func testCloneFetchPullPush(t *testing.T, guarded bool) {
	g, base, work := remoteSetup(t)
	ctx, _ := newGit(t)
	seen := map[string]int{}
	if guarded {
		g.Guard = func(string) func([]string) error {
			return func(paths []string) error {
				for _, p := range paths {
					seen[p]++
				}
				return nil
			}
		}
	}
	if got := readFile(t, work, "a.txt"); got != "1\n" {
		t.Fatalf("cloned a.txt = %q", got)
	}
	// A second clone, by file URL, shallow, of a branch.
	other := filepath.Join(base, "sub", "other")
	if err := os.Mkdir(filepath.Dir(other), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Clone(ctx, CloneOptions{URL: "file://" + filepath.Join(base, "origin.git"), Dest: other, Ref: "main", Depth: 1}); err != nil {
		t.Fatalf("Clone by file URL = %v", err)
	}
	if _, err := g.Clone(ctx, CloneOptions{URL: filepath.Join(base, "origin.git"), Dest: other}); kindOf(err) != "exist" {
		t.Errorf("Clone into a non-empty directory = %v", err)
	}

	// Push a new branch with an upstream, then a commit to main.
	mustGit(t, ctx, g, work, "checkout", "-q", "-b", "topic")
	commitFiles(t, ctx, g, work, "topic", map[string]string{"t.txt": "t"})
	out, err := g.Push(ctx, work, RemoteOptions{SetUpstream: true})
	if err != nil || !strings.Contains(out, "[new branch]") {
		t.Fatalf("Push -u = %q, %v", out, err)
	}
	if up := strings.TrimSpace(mustGit(t, ctx, g, work, "rev-parse", "--abbrev-ref", "topic@{upstream}")); up != "origin/topic" {
		t.Errorf("upstream = %q", up)
	}
	mustGit(t, ctx, g, work, "checkout", "-q", "main")
	commitFiles(t, ctx, g, work, "two", map[string]string{"a.txt": "2\n"})
	if _, err := g.Push(ctx, work, RemoteOptions{Remote: "origin", Ref: "main"}); err != nil {
		t.Fatalf("Push main = %v", err)
	}

	// The other clone fetches and pulls it.
	if out, err := g.Fetch(ctx, other, RemoteOptions{Remote: "origin", Ref: "main"}); err != nil {
		t.Fatalf("Fetch = %q, %v", out, err)
	}
	if _, err := g.Pull(ctx, other, RemoteOptions{}); err != nil {
		t.Fatalf("Pull = %v", err)
	}
	if got := readFile(t, other, "a.txt"); got != "2\n" {
		t.Errorf("a.txt after pull = %q", got)
	}
	if guarded && (seen["a.txt"] != 2 || seen["t.txt"] != 0) {
		t.Errorf("the guard saw %v, want a.txt for the clone and the pull (t.txt is on another branch)", seen)
	}

	// other commits on main: pushing it is rejected (not a fast-forward).
	commitFiles(t, ctx, g, other, "other three", map[string]string{"a.txt": "other\n"})
	commitFiles(t, ctx, g, work, "work three", map[string]string{"a.txt": "work\n"})
	if _, err := g.Push(ctx, work, RemoteOptions{}); err != nil {
		t.Fatalf("Push = %v", err)
	}
	_, err = g.Push(ctx, other, RemoteOptions{})
	if kindOf(err) != "push_rejected" || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("non-fast-forward Push = %v", err)
	}
	// Pulling merges and stops on the conflict in a.txt.
	_, err = g.Pull(ctx, other, RemoteOptions{})
	if kindOf(err) != "merge_conflict" || !strings.Contains(err.Error(), "a.txt") {
		t.Fatalf("conflicting Pull = %v", err)
	}
	st, err := g.Status(ctx, other, StatusOptions{})
	if err != nil || len(st.Entries) != 1 || st.Entries[0].Kind != KindUnmerged || st.Entries[0].Path != "a.txt" {
		t.Errorf("status after the conflict = %+v, %v", st, err)
	}
}

func TestRemoteRefused(t *testing.T) {
	g, base, work := remoteSetup(t)
	ctx, _ := newGit(t)
	outside := t.TempDir()
	mustGit(t, ctx, g, outside, "init", "-q", "--bare", "x.git")
	tests := []struct {
		name string
		run  func() error
		code string
	}{
		{"ext transport", func() error {
			_, err := g.Clone(ctx, CloneOptions{URL: "ext::sh -c touch% /tmp/pwned", Dest: filepath.Join(base, "c1")})
			return err
		}, "invalid"},
		{"url like an option", func() error {
			_, err := g.Clone(ctx, CloneOptions{URL: "--upload-pack=touch /tmp/pwned", Dest: filepath.Join(base, "c2")})
			return err
		}, "invalid"},
		{"ssh host like an option", func() error {
			_, err := g.Clone(ctx, CloneOptions{URL: "ssh://-oProxyCommand=x/y", Dest: filepath.Join(base, "c3")})
			return err
		}, "invalid"},
		{"local repository outside the root", func() error {
			_, err := g.Clone(ctx, CloneOptions{URL: filepath.Join(outside, "x.git"), Dest: filepath.Join(base, "c4")})
			return err
		}, "outside_root"},
		{"ref like an option", func() error {
			_, err := g.Fetch(ctx, work, RemoteOptions{Remote: "origin", Ref: "--upload-pack=x"})
			return err
		}, "invalid"},
		{"remote like an option", func() error {
			_, err := g.Fetch(ctx, work, RemoteOptions{Remote: "--upload-pack=x"})
			return err
		}, "invalid"},
		{"fetch from a remote helper URL", func() error {
			_, err := g.Fetch(ctx, work, RemoteOptions{Remote: "fd::3"})
			return err
		}, "invalid"},
		{"configured remote outside the root", func() error {
			mustGit(t, ctx, g, work, "remote", "add", "evil", filepath.Join(outside, "x.git"))
			defer mustGit(t, ctx, g, work, "remote", "remove", "evil")
			_, err := g.Fetch(ctx, work, RemoteOptions{})
			return err
		}, "outside_root"},
		{"unknown remote", func() error {
			_, err := g.Push(ctx, work, RemoteOptions{Remote: "nope"})
			return err
		}, "remote_not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); kindOf(err) != tc.code {
				t.Errorf("err = %v, want %s", err, tc.code)
			}
		})
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Error("/tmp/pwned exists")
	}
}

// TestRemoteCredentials: an https remote answering 401 is ErrCredentials at
// once: git never prompts (the test's deadline would end a hang).
func TestRemoteCredentials(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="outpost-test"`)
		http.Error(w, "credentials needed", http.StatusUnauthorized)
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, g := newGit(t)
	g.Env = append(g.Env, "GIT_SSL_CAINFO="+ca)
	dest := filepath.Join(t.TempDir(), "c")
	_, err := g.Clone(ctx, CloneOptions{URL: srv.URL + "/repo.git", Dest: dest})
	if kindOf(err) != "credentials" {
		t.Fatalf("Clone from a 401 remote = %v", err)
	}
	if _, serr := os.Stat(dest); !os.IsNotExist(serr) {
		t.Errorf("a failed clone left %s: %v", dest, serr)
	}
}

func TestClassifyURL(t *testing.T) {
	tests := []struct {
		url   string
		kind  URLKind
		local string
		ok    bool
	}{
		{"https://github.com/a/b.git", URLNetwork, "", true},
		{"ssh://git@host:22/a/b", URLNetwork, "", true},
		{"git@github.com:a/b.git", URLNetwork, "", true},
		{"git://host/a", URLNetwork, "", true},
		{"file:///srv/a.git", URLLocal, "/srv/a.git", true},
		{"/srv/a.git", URLLocal, "/srv/a.git", true},
		{"repos/a.git", URLLocal, "repos/a.git", true},
		{"http://host/a", 0, "", false},
		{"ext::sh -c x", 0, "", false},
		{"ext::x", 0, "", false},
		{"fd::3", 0, "", false},
		{"file::/srv/a", 0, "", false},
		{"foo+bar::x", 0, "", false},
		{"-u", 0, "", false},
		{"ssh://-oProxyCommand=x/a", 0, "", false},
		{"ssh://u@-o/a", 0, "", false},
		{"-oProxyCommand=x:a", 0, "", false},
		{"u@-x:a", 0, "", false},
		{"file://host/a", 0, "", false},
		{"file:///a%2e", 0, "", false},
		{"https://h/a b", 0, "", false},
		{"https://h/a\n", 0, "", false},
		{"", 0, "", false},
		{"ftp://h/a", 0, "", false},
	}
	for _, tc := range tests {
		kind, local, err := ClassifyURL(tc.url)
		if (err == nil) != tc.ok || err == nil && (kind != tc.kind || local != tc.local) {
			t.Errorf("ClassifyURL(%q) = %v %q %v", tc.url, kind, local, err)
		}
	}
}

func FuzzClassifyURL(f *testing.F) {
	for _, s := range []string{"https://h/a", "git@h:a", "ext::x", "file:///a", "a/b", "-x", "ssh://-x/a", "x+y::z", "[::1]:a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		kind, local, err := ClassifyURL(u)
		if err != nil {
			return
		}
		helper := strings.TrimLeftFunc(u, isSchemeRune)
		if strings.HasPrefix(u, "-") || strings.HasPrefix(helper, "::") || strings.ContainsFunc(u, isControlOrSpace) {
			t.Fatalf("%q accepted as %v", u, kind)
		}
		if kind == URLLocal && local == "" {
			t.Fatalf("%q local with no path", u)
		}
	})
}

func TestClassifyRemote(t *testing.T) {
	tests := []struct{ msg, kind string }{
		{"fatal: could not read Username for 'https://h': terminal prompts disabled", "credentials"},
		{"git@h: Permission denied (publickey).\nfatal: Could not read from remote repository.", "credentials"},
		{"remote: HTTP Basic: Access denied\nfatal: Authentication failed for 'https://h/a.git/'", "credentials"},
		{" ! [rejected]        main -> main (non-fast-forward)\nerror: failed to push some refs to 'x'", "push_rejected"},
		{" ! [remote rejected] main -> main (pre-receive hook declined)", "push_rejected"},
		{"error: Your local changes to the following files would be overwritten by merge:\n\ta.txt", "local_changes"},
		{"*** Please tell me who you are.", "commit_refused"},
		{"fatal: '/x' does not appear to be a git repository", "remote_not_found"},
		{"fatal: couldn't find remote ref nope", "remote_not_found"},
		{"fatal: unable to access 'https://127.0.0.1:1/x/': Failed to connect to 127.0.0.1 port 1: Connection refused", "unreachable"},
		{"ssh: Could not resolve hostname nope: Name or service not known", "unreachable"},
		{"fatal: transport 'ext' not allowed", "invalid"},
	}
	for _, tc := range tests {
		if got := kindOf(errorf(classifyRemote(tc.msg), "%s", tc.msg)); got != tc.kind {
			t.Errorf("classifyRemote(%q) = %s, want %s", tc.msg, got, tc.kind)
		}
	}
}
