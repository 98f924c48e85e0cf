package console_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/outposttest"
	"github.com/outposthq/outpost/wire"
)

// carrySteps: a swap with "carry files" checked moves the session to
// another real agent with the old backend's files; the card shows the new
// active backend, the epoch and the last carry, and the file is on the
// new machine's disk.
func carrySteps(t *testing.T, p *page, env *outposttest.Env, laptopRoot string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	deskRoot := t.TempDir()
	if _, err := env.RealAgent(ctx, "desk", deskRoot); err != nil {
		t.Fatalf("real agent desk: %v", err)
	}
	const name, content = "carried/notes.txt", "written on the laptop\n"
	if err := os.MkdirAll(filepath.Join(laptopRoot, "carried"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(laptopRoot, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := env.Client.CreateSession(ctx, "", client.CreateSessionRequest{ID: "moving", Active: "laptop", Backends: map[string]client.SessionBackend{
		"laptop": {Kind: client.KindAgent, Agent: "laptop"},
		"desk":   {Kind: client.KindAgent, Agent: "desk"},
	}})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	p.run("refresh sessions", chromedp.Click(`//main//button[text()="Refresh"]`))
	card := `section[data-session="moving"]`
	p.waitText(card+` .active`, regexp.MustCompile(`^laptop$`))
	p.run("swap with carry", chromedp.SetValue(card+` select[name="to"]`, "desk", chromedp.ByQuery),
		chromedp.Click(card+` input[name="carry"]`, chromedp.ByQuery),
		chromedp.Click(card+` button[type="submit"]`, chromedp.ByQuery))
	p.waitText(`main > p[role="status"]`, regexp.MustCompile(fmt.Sprintf(`^Swapped moving to desk, epoch %d\.$`, s.Epoch+1)))
	p.waitText(card+` .active`, regexp.MustCompile(`^desk$`))
	p.waitText(card+` .epoch`, regexp.MustCompile(fmt.Sprintf(`^%d$`, s.Epoch+1)))
	got, err := env.Client.GetSession(ctx, "", "moving")
	if err != nil || got.LastCarry == nil {
		t.Fatalf("session after the carry: %+v, %v; want a lastCarry", got, err)
	}
	lc := got.LastCarry
	p.waitText(card, regexp.MustCompile(regexp.QuoteMeta(fmt.Sprintf("Last carry: snapshot %s from laptop,", lc.Snapshot))+
		fmt.Sprintf(`.*, %d files, `, lc.Files)))
	if lc.From != "laptop" || lc.Files < 1 {
		t.Errorf("lastCarry %+v, want from laptop with the files", lc)
	}
	if b, err := os.ReadFile(filepath.Join(deskRoot, name)); err != nil || string(b) != content {
		t.Errorf("%s on desk after the carry: %q, %v; want %q", name, b, err, content)
	}
}

// portSteps: the ports page lists a real HTTP server listening on the
// agent's machine; a preview link made there opens the served page in a
// browser tab without a token; deleting it makes it 403.
func portSteps(t *testing.T, p *page, env *outposttest.Env) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>app</title><h1>served at %s</h1>", r.URL.Path)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	p.run("ports", chromedp.Click(`//nav//a[text()="Ports"]`))
	p.waitText(`main h1`, regexp.MustCompile(`^Ports$`))
	row := fmt.Sprintf(`tr[data-port="%d"]`, port)
	waitUntil(t, "the server listed", func() (bool, string) {
		s := p.text(row)
		if regexp.MustCompile(`^` + strconv.Itoa(port) + `\s+127\.0\.0\.1`).MatchString(s) {
			return true, s
		}
		p.run("refresh ports", chromedp.Click(`//main//button[text()="Refresh"]`))
		return false, p.text(`main table`)
	})
	p.clickFresh("make a link", row+` button`)
	li := fmt.Sprintf(`li[data-port="%d"]`, port)
	url := p.waitText(li+` a`, regexp.MustCompile(`^`+regexp.QuoteMeta(env.Server.URL())+`/preview/[a-z2-7]+/?$`))

	// Opened in a tab of its own, without the token, it shows the app. A
	// fresh tab per URL: chromedp's Navigate did not return (30 s) when the
	// tab's previous page was a sandboxed preview (CSP sandbox, an opaque
	// origin) and the next one is not.
	open := func(u string) string {
		t.Helper()
		tab, closeTab := chromedp.NewContext(p.ctx)
		defer closeTab()
		tctx, cancel := context.WithTimeout(tab, waitFor)
		defer cancel()
		var body string
		if err := chromedp.Run(tctx, chromedp.Navigate(u)); err != nil {
			t.Fatalf("open %s: %v", u, err)
		}
		if err := chromedp.Run(tctx, chromedp.Evaluate(`document.body ? document.body.innerText : document.documentElement.outerHTML`, &body)); err != nil {
			t.Fatalf("read %s: %v", u, err)
		}
		return body
	}
	base := regexp.MustCompile(`/$`).ReplaceAllString(url, "")
	if body := open(base + "/some/page"); body != "served at /some/page" {
		t.Errorf("the preview link shows %q, want the served page", body)
	}

	p.run("delete the link", chromedp.Click(li+` button.danger`, chromedp.ByQuery))
	p.waitText(`main [role="status"]`, regexp.MustCompile(fmt.Sprintf(`^Deleted the preview link for port %d`, port)))
	if s := p.text(li); s != "" {
		t.Errorf("the deleted link is still listed: %q", s)
	}
	res, err := http.Get(base + "/some/page")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("the deleted link answers %d, want 403", res.StatusCode)
	}
	if body := open(base + "/"); !strings.Contains(body, `"reason":"`+wire.ReasonLinkInvalid+`"`) {
		t.Errorf("the deleted link shows %q in the browser, want link_invalid", body)
	}
}
