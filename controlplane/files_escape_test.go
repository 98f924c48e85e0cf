package controlplane

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// escapeFixture is a base directory holding the agent's root and, beside
// it, a tree the agent must never read or write; the root holds links out.
type escapeFixture struct {
	base, root, outside string
}

func newEscapeFixture(t *testing.T, root string) *escapeFixture {
	t.Helper()
	fx := &escapeFixture{base: filepath.Dir(root), root: root, outside: filepath.Join(filepath.Dir(root), "outside")}
	writeFile(t, filepath.Join(fx.outside, "secret.txt"), "secret", 0o600)
	writeFile(t, filepath.Join(fx.outside, "sub", "inner.txt"), "inner", 0o644)
	writeFile(t, filepath.Join(fx.base, "sibling.txt"), "sibling", 0o644)
	writeFile(t, filepath.Join(root, "a.txt"), "a", 0o644)
	writeFile(t, filepath.Join(root, "dir", "b.txt"), "b", 0o644)
	for link, target := range map[string]string{
		"toetc":      "/etc",
		"tooutside":  "../outside",
		"toparent":   "..",
		"secretlink": "../outside/secret.txt",
		"absoutside": fx.outside,
		"dir/mid":    "../../outside",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

// snapshot records every name outside the root under base (content, mode,
// link target), to prove nothing there changed.
func (fx *escapeFixture) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(fx.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == fx.root {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			v += " " + string(b)
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// escapeCall is one HTTP attempt to leave the root.
type escapeCall struct {
	name   string
	method string
	path   string // after the target prefix, query included
	body   string
	status int
}

var etcProbe = fmt.Sprintf("outpost-cp-escape-%d", os.Getpid())

// escapeCalls are the attempts: lexical, absolute, through links to /etc,
// to the parent, to a sibling tree and through a link in the middle of a
// path, for every call of the Files table and the git calls, writes
// through each.
func escapeCalls() []escapeCall {
	q := func(p string) string { return url.QueryEscape(p) }
	big := strings.Repeat("x", 3<<20) // over one chunk: the chunked upload path
	deep := strings.Repeat("../", 1000) + "etc/passwd"
	c := []escapeCall{
		{"stat dotdot", "GET", "/fs/stat?path=" + q("../outside/secret.txt"), "", 403},
		{"stat inner dotdot", "GET", "/fs/stat?path=" + q("dir/../../outside/secret.txt"), "", 403},
		{"stat slash dotdot", "GET", "/fs/stat?path=" + q("/.."), "", 403},
		{"stat via etc link", "GET", "/fs/stat?path=" + q("toetc/passwd"), "", 403},
		{"stat via middle link", "GET", "/fs/stat?path=" + q("dir/mid/secret.txt"), "", 403},
		{"stat nul", "GET", "/fs/stat?path=" + q("a.txt\x00/../../outside"), "", 403},
		{"stat long", "GET", "/fs/stat?path=" + q(strings.Repeat("a/", 3000)), "", 400},
		{"list parent", "GET", "/fs/list?path=..", "", 403},
		{"list outside", "GET", "/fs/list?path=" + q("../outside") + "&recursive=true", "", 403},
		{"list via outside link", "GET", "/fs/list?path=" + q("tooutside/sub"), "", 403},
		{"list via parent link", "GET", "/fs/list?path=" + q("toparent/outside"), "", 403},
		{"list via etc link", "GET", "/fs/list?path=" + q("toetc/ssl"), "", 403},
		{"get dotdot", "GET", "/fs/file?path=" + q("../outside/secret.txt"), "", 403},
		{"get deep dotdot", "GET", "/fs/file?path=" + q(deep), "", 403},
		{"get final link out", "GET", "/fs/file?path=secretlink", "", 403},
		{"get via outside link", "GET", "/fs/file?path=" + q("tooutside/secret.txt"), "", 403},
		{"get via absolute link", "GET", "/fs/file?path=" + q("absoutside/secret.txt"), "", 403},
		{"get via etc link", "GET", "/fs/file?path=" + q("toetc/passwd"), "", 403},
		{"get via parent link", "GET", "/fs/file?path=" + q("toparent/sibling.txt"), "", 403},
		{"get via middle link", "GET", "/fs/file?path=" + q("dir/mid/secret.txt"), "", 403},
		{"get etc passwd is inside", "GET", "/fs/file?path=" + q("/etc/passwd"), "", 404},
		{"put dotdot new", "PUT", "/fs/file?path=" + q("../outside/new.txt"), "pwned", 403},
		{"put dotdot overwrite", "PUT", "/fs/file?path=" + q("../outside/secret.txt"), "pwned", 403},
		{"put inner dotdot", "PUT", "/fs/file?path=" + q("dir/../../sibling.txt"), "pwned", 403},
		{"put via outside link", "PUT", "/fs/file?path=" + q("tooutside/new.txt"), "pwned", 403},
		{"put via middle link", "PUT", "/fs/file?path=" + q("dir/mid/secret.txt"), "pwned", 403},
		{"put via parent link", "PUT", "/fs/file?path=" + q("toparent/sibling.txt"), "pwned", 403},
		{"put via etc link", "PUT", "/fs/file?path=" + q("toetc/"+etcProbe), "pwned", 403},
		{"put via etc link parents", "PUT", "/fs/file?path=" + q("toetc/"+etcProbe+"/x"), "pwned", 403},
		{"put chunked dotdot", "PUT", "/fs/file?path=" + q("../outside/big.bin"), big, 403},
		{"put chunked via link", "PUT", "/fs/file?path=" + q("tooutside/big.bin"), big, 403},
		{"put nul", "PUT", "/fs/file?path=" + q("x\x00/../../outside/n"), "pwned", 403},
		{"put over final link replaces the link", "PUT", "/fs/file?path=secretlink", "inside", 200},
		{"put absolute lands inside", "PUT", "/fs/file?path=" + q("/outside/secret.txt"), "inside", 200},
		{"mkdir dotdot", "POST", "/fs/mkdir", `{"path":"../outside/newdir"}`, 403},
		{"mkdir via outside link", "POST", "/fs/mkdir", `{"path":"tooutside/newdir"}`, 403},
		{"mkdir via etc link", "POST", "/fs/mkdir", `{"path":"toetc/` + etcProbe + `"}`, 403},
		{"mkdir parents via middle link", "POST", "/fs/mkdir", `{"path":"dir/mid/x/y","parents":true}`, 403},
		{"mkdir parents via parent link", "POST", "/fs/mkdir", `{"path":"toparent/newtree","parents":true}`, 403},
		{"move to outside", "POST", "/fs/move", `{"from":"a.txt","to":"../outside/moved.txt"}`, 403},
		{"move into outside link", "POST", "/fs/move", `{"from":"a.txt","to":"tooutside/moved.txt","overwrite":true}`, 403},
		{"move from outside", "POST", "/fs/move", `{"from":"../outside/secret.txt","to":"stolen.txt"}`, 403},
		{"move out of outside link", "POST", "/fs/move", `{"from":"tooutside/secret.txt","to":"stolen.txt"}`, 403},
		{"move dir via middle link", "POST", "/fs/move", `{"from":"dir/mid/sub","to":"dir/stolen"}`, 403},
		{"remove dotdot", "DELETE", "/fs?path=" + q("../outside/secret.txt"), "", 403},
		{"remove parent recursive", "DELETE", "/fs?path=..&recursive=true", "", 403},
		{"remove via outside link", "DELETE", "/fs?path=" + q("tooutside/secret.txt"), "", 403},
		{"remove recursive via link", "DELETE", "/fs?path=" + q("tooutside/sub") + "&recursive=true", "", 403},
		{"remove via middle link", "DELETE", "/fs?path=" + q("dir/mid/sub/inner.txt"), "", 403},
		{"remove the link itself", "DELETE", "/fs?path=tooutside&recursive=true", "", 204},
		{"git status dotdot", "GET", "/git/status?path=" + q("../outside"), "", 403},
		{"git status via link", "GET", "/git/status?path=tooutside", "", 403},
		{"git diff via parent link", "GET", "/git/diff?path=toparent", "", 403},
		{"git log via middle link", "GET", "/git/log?path=" + q("dir/mid"), "", 403},
		{"git apply dotdot", "POST", "/git/apply", `{"path":"../outside","patch":"x"}`, 403},
		{"git commit via etc link", "POST", "/git/commit", `{"path":"toetc","message":"m","all":true}`, 403},
	}
	return c
}

func TestFileEscapesOverHTTP(t *testing.T) {
	e := newFilesEnv(t)
	calls := escapeCalls()
	if len(calls) < 40 {
		t.Fatalf("only %d escape attempts", len(calls))
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			// A fresh tree for each attempt: earlier ones may have
			// replaced links inside the root. The root directory itself
			// stays: the agent holds it open.
			emptyDir(t, e.root)
			os.RemoveAll(filepath.Join(filepath.Dir(e.root), "outside"))
			os.Remove(filepath.Join(filepath.Dir(e.root), "sibling.txt"))
			fx := newEscapeFixture(t, e.root)
			before := fx.snapshot(t)
			var body any
			if tc.body != "" {
				body = tc.body
			}
			status, out := call(t, e.s, tc.method, e.path+tc.path, e.s.AdminToken(), body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", status, tc.status, out)
			}
			if status == 403 {
				if code, reason := errorCode(t, out); reason != "outside_root" {
					t.Errorf("%s/%s, want permission_denied/outside_root", code, reason)
				}
			}
			after := fx.snapshot(t)
			if d := diffMaps(before, after); d != "" {
				t.Errorf("outside the root changed:\n%s", d)
			}
			if _, err := os.Lstat(filepath.Join("/etc", etcProbe)); err == nil {
				os.RemoveAll(filepath.Join("/etc", etcProbe))
				t.Errorf("created /etc/%s", etcProbe)
			}
			if tmp := tempNames(t, fx.base); len(tmp) > 0 {
				t.Errorf("temporary files left: %v", tmp)
			}
		})
	}
}

func diffMaps(a, b map[string]string) string {
	var d []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			d = append(d, "removed "+k)
		} else if w != v {
			d = append(d, "changed "+k+": "+v+" → "+w)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "added "+k)
		}
	}
	sort.Strings(d)
	return strings.Join(d, "\n")
}

// tempNames lists the upload temporary files under dir.
func tempNames(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".outpost-tmp-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// emptyDir removes everything in dir but dir itself.
func emptyDir(t testing.TB, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}
