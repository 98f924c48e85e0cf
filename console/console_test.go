package console_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/outposthq/outpost/outposttest"
)

// get fetches path from the control plane, gzip accepted or not.
func get(t *testing.T, base, method, path string, gz bool) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

var cspNonce = regexp.MustCompile(`style-src 'self' 'nonce-([A-Za-z0-9_-]{20,})'`)

// TestConsoleRoutesAndHeaders: the console is at / and /device with a
// strict policy and no cookie; the API's own routes and its JSON 404s are
// as before.
func TestConsoleRoutesAndHeaders(t *testing.T) {
	env := outposttest.New(t, outposttest.Config{})
	base := env.Server.URL()
	nonces := map[string]bool{}
	for _, path := range []string{"/", "/device", "/device?code=ABCD-EFGH"} {
		res, body := get(t, base, "GET", path, false)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self';", "connect-src 'self' ws: wss:", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: policy %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: policy allows something unsafe: %q", path, csp)
		}
		m := cspNonce.FindStringSubmatch(csp)
		if m == nil || !strings.Contains(string(body), `content="`+m[1]+`"`) {
			t.Fatalf("GET %s: the page does not carry the policy's style nonce (%q)", path, csp)
		}
		nonces[m[1]] = true
		for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
			if got := res.Header.Get(h); got != want {
				t.Errorf("GET %s: %s = %q, want %q", path, h, got, want)
			}
		}
		if c := res.Header.Values("Set-Cookie"); len(c) != 0 {
			t.Errorf("GET %s sets cookies: %q", path, c)
		}
		if regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|\sstyle=|\son[a-z]+=`).Match(body) {
			t.Errorf("GET %s: the page has inline script or style:\n%s", path, body)
		}
	}
	if len(nonces) != 3 {
		t.Errorf("style nonces repeat across responses: %v", nonces)
	}

	// The API's routes are untouched.
	if res, body := get(t, base, "GET", "/healthz", false); res.StatusCode != 200 || !strings.Contains(string(body), `"ok"`) {
		t.Errorf("/healthz: %d %s", res.StatusCode, body)
	}
	for _, c := range []struct {
		method, path string
		status       int
		reason       string
	}{
		{"GET", "/v1/nothing-here", 404, "no_route"},
		{"GET", "/index.html", 404, "no_route"},
		{"POST", "/", 405, "method_not_allowed"},
		{"GET", "/v1/workspaces/default/agents", 401, ""},
	} {
		res, body := get(t, base, c.method, c.path, false)
		var e struct{ Error struct{ Code, Reason string } }
		if res.StatusCode != c.status || json.Unmarshal(body, &e) != nil || e.Error.Reason != c.reason {
			t.Errorf("%s %s: %d %s, want %d with reason %q", c.method, c.path, res.StatusCode, body, c.status, c.reason)
		}
	}

	// Files: gzipped when asked, typed, revalidated by ETag; nothing else.
	res, body := get(t, base, "GET", "/console/app.js", true)
	if res.StatusCode != 200 || res.Header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("app.js: %d %v", res.StatusCode, res.Header)
	}
	zr, err := gzip.NewReader(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	want, _ := os.ReadFile("assets/app.js")
	if string(plain) != string(want) {
		t.Errorf("app.js gunzipped differs from assets/app.js")
	}
	req, _ := http.NewRequest("GET", base+"/console/app.js", nil)
	req.Header.Set("If-None-Match", res.Header.Get("ETag"))
	if r2, err := http.DefaultClient.Do(req); err != nil || r2.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation: %v %v", r2, err)
	} else {
		r2.Body.Close()
	}
	for _, path := range []string{"/console/nope.js", "/console/index.html", "/console/", "/console/vendor", "/console/%2e%2e/console.go"} {
		if res, _ := get(t, base, "GET", path, false); res.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", path, res.StatusCode)
		}
	}
}

// firstLoadBudget is the most the console may cost a first visit,
// compressed: API.md's console is light.
const firstLoadBudget = 300 << 10

// TestConsoleFirstLoadFitsTheBudget sums every file the console can load
// (xterm.js included), gzipped as served.
func TestConsoleFirstLoadFitsTheBudget(t *testing.T) {
	env := outposttest.New(t, outposttest.Config{})
	total := 0
	_, index := get(t, env.Server.URL(), "GET", "/", true)
	total += len(index)
	err := filepath.WalkDir("assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "assets/index.html" || strings.HasPrefix(filepath.Base(p), "LICENSE") {
			return err
		}
		res, body := get(t, env.Server.URL(), "GET", "/console/"+strings.TrimPrefix(filepath.ToSlash(p), "assets/"), true)
		if res.StatusCode != 200 {
			t.Errorf("%s: %d", p, res.StatusCode)
		}
		total += len(body)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("every console file, gzipped as served: %d bytes (budget %d)", total, firstLoadBudget)
	if total > firstLoadBudget {
		t.Errorf("the console weighs %d bytes compressed, over the %d budget", total, firstLoadBudget)
	}
}
