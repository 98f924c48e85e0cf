package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/outposttest"
)

// axeViolation is what axe-core reports of one broken rule.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

// axeCheck runs axe-core (testdata/axe.min.js, built offline by
// scripts/console-build) on the page as it is, for WCAG 2.1 A and AA, and
// fails on every violation.
func axeCheck(t *testing.T, p *page, where string) {
	t.Helper()
	src, err := os.ReadFile("testdata/axe.min.js")
	if err != nil {
		t.Fatal(err)
	}
	var loaded bool
	if err := p.eval(string(src)+";\ntypeof axe === 'object'", &loaded); err != nil || !loaded {
		t.Fatalf("load axe-core: %v", err)
	}
	var out string
	if err := p.eval(`axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}}).then(r => JSON.stringify(r.violations))`, &out); err != nil {
		t.Fatalf("axe on %s: %v", where, err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		var nodes []string
		for _, n := range v.Nodes {
			nodes = append(nodes, fmt.Sprint(n.Target)+" "+n.HTML)
		}
		t.Errorf("%s: axe %s (%s): %s\n  %s", where, v.ID, v.Impact, v.Help, strings.Join(nodes, "\n  "))
	}
}

// TestConsoleAccessibility signs in with the keyboard alone, moves between
// pages with Tab and Enter, and runs axe-core on every page.
func TestConsoleAccessibility(t *testing.T) {
	env := outposttest.New(t, outposttest.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := env.RealAgent(ctx, "laptop", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.CreateSession(ctx, "", client.CreateSessionRequest{ID: "work", Active: "a", Backends: map[string]client.SessionBackend{
		"a": {Kind: client.KindAgent, Agent: "laptop"}, "b": {Kind: client.KindAgent, Agent: "mock"},
	}}); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.run("open", chromedp.Navigate(env.Server.URL()+"/"), chromedp.WaitVisible(`input[name="token"]`, chromedp.ByQuery))
	axeCheck(t, p, "sign in")

	// Keyboard only: the workspace field has focus; Tab to the token, Enter.
	var focused string
	if err := p.eval(`document.activeElement.name`, &focused); err != nil || focused != "workspace" {
		t.Fatalf("focus on load: %q (%v), want the workspace field", focused, err)
	}
	p.run("tab, token, enter", chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(env.Server.AdminToken()), chromedp.KeyEvent(kb.Enter))
	p.waitText(`tr[data-agent="laptop"] .status`, regexp.MustCompile(`^online$`))
	axeCheck(t, p, "agents")

	// From the top of the page (its first focusable element, the skip
	// link), Tab reaches every page's link; Enter opens it and focus moves
	// to its heading. (A blur left Chromium's Tab starting point in the
	// page's content: past the Ports page's one button per listening port
	// on this machine, more than 20 Tabs on a busy one.)
	for _, name := range []string{"Sessions", "Processes", "Files", "Ports", "Audit log", "Device login", "Agents"} {
		p.run("focus the top", chromedp.Evaluate(`document.querySelector('a.skip').focus(); window.scrollTo(0, 0)`, nil))
		var tabs int
		for tabs = 1; tabs <= 20; tabs++ {
			p.run("tab", chromedp.KeyEvent(kb.Tab))
			if err := p.eval(`document.activeElement.textContent`, &focused); err != nil {
				t.Fatal(err)
			}
			if focused == name {
				break
			}
		}
		if focused != name {
			t.Fatalf("Tab did not reach the %q link (last focus %q)", name, focused)
		}
		p.run("enter", chromedp.KeyEvent(kb.Enter))
		p.waitText(`main h1`, regexp.MustCompile(`^`+regexp.QuoteMeta(name)+`$`))
		switch name {
		case "Processes":
			p.run("a terminal", chromedp.Evaluate(`document.querySelector('input[name="command"]').value = "sh"`, nil),
				chromedp.Click(`form button[type="submit"]`, chromedp.ByQuery))
			p.waitText(`.term-bar [role="status"]`, regexp.MustCompile(`^connected$`))
		case "Sessions":
			p.waitText(`section[data-session="work"] .active`, regexp.MustCompile(`^a$`))
		}
		waitUntil(t, "focus in "+name+"'s content", func() (bool, string) {
			var in bool
			err := p.eval(`document.querySelector('main').contains(document.activeElement)`, &in)
			return err == nil && in, fmt.Sprint(err)
		})
		axeCheck(t, p, name)
	}
}
