package console_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/input"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// waitFor is how long a page may take to show what a step expects.
const waitFor = 30 * time.Second

// chromiumPath finds Debian's chromium; .ci/run installs it. A missing
// browser fails the test (never a skip).
func chromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{os.Getenv("OUTPOST_CHROMIUM"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium: install Debian's chromium package (apt-get install chromium) or set OUTPOST_CHROMIUM")
	return ""
}

// page is one headless Chromium tab with what it reported: uncaught
// exceptions and console errors (CSP violations among them).
type page struct {
	t        testing.TB
	ctx      context.Context
	dl       string // download directory
	mu       sync.Mutex
	problems []string
}

// newPage starts a fresh Chromium (its own profile under t.TempDir) and
// closes it when the test ends; on failure it saves a screenshot and the
// page's HTML first (see artifactDir).
func newPage(t *testing.T) *page {
	t.Helper()
	// The profile is removed after Chromium's helpers are gone; they may
	// still write to it for a moment after the browser exits.
	profile, err := os.MkdirTemp("", "outpost-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := 0; i < 50; i++ {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	p := &page{t: t, ctx: ctx, dl: t.TempDir()}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			p.report("exception: " + ev.ExceptionDetails.Error())
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.LevelError {
				p.report(fmt.Sprintf("console %s: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				p.report("console.error: " + strings.Join(parts, " "))
			}
		}
	})
	if err := chromedp.Run(ctx, cdplog.Enable(),
		browser.SetDownloadBehavior(browser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(p.dl)); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			p.saveArtifacts()
		}
		cancelCtx()
		cancelAlloc()
	})
	return p
}

func (p *page) report(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.problems = append(p.problems, s)
}

// expectProblem takes the reports matching re (an error the step
// provoked on purpose) and fails when there is none.
func (p *page) expectProblem(re *regexp.Regexp) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.problems[:0]
	found := false
	for _, s := range p.problems {
		if re.MatchString(s) {
			found = true
			continue
		}
		kept = append(kept, s)
	}
	p.problems = kept
	if !found {
		p.t.Errorf("the page reported no problem matching %q", re)
	}
}

// checkClean fails the test on anything the page reported so far.
func (p *page) checkClean() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.problems {
		p.t.Errorf("page reported: %s", s)
	}
	p.problems = nil
}

// artifactDir is where failed tests leave screenshots:
// $OUTPOST_TEST_ARTIFACTS, else $TMPDIR/outpost-console-artifacts.
func artifactDir() string {
	if d := os.Getenv("OUTPOST_TEST_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "outpost-console-artifacts")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func (p *page) saveArtifacts() {
	dir := artifactDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		p.t.Logf("artifacts: %v", err)
		return
	}
	name := filepath.Join(dir, unsafeName.ReplaceAllString(p.t.Name(), "_"))
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	var png []byte
	var html string
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 90), chromedp.OuterHTML("html", &html, chromedp.ByQuery)); err != nil {
		p.t.Logf("artifacts: %v", err)
		return
	}
	_ = os.WriteFile(name+".png", png, 0o600)
	_ = os.WriteFile(name+".html", []byte(html), 0o600)
	p.t.Logf("screenshot of the failure: %s.png (page: %s.html)", name, name)
}

// run runs actions, failing the test on an error.
func (p *page) run(what string, actions ...chromedp.Action) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitFor)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// clickFresh clicks the element sel (by query) in content the page
// re-renders (the ports table refreshes): a node found and then replaced
// before the click is "Could not find node with given id", and the click
// is tried again on the new node, until waitFor.
func (p *page) clickFresh(what, sel string) {
	p.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		ctx, cancel := context.WithTimeout(p.ctx, waitFor)
		err := chromedp.Run(ctx, chromedp.Click(sel, chromedp.ByQuery))
		cancel()
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node") || time.Now().After(deadline) {
			p.t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) into res.
func (p *page) eval(expr string, res any) error {
	ctx, cancel := context.WithTimeout(p.ctx, waitFor)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate(expr, res, func(e *runtime.EvaluateParams) *runtime.EvaluateParams {
		return e.WithAwaitPromise(true)
	}))
}

// text is the innerText of the first element matching the CSS selector,
// "" when there is none.
func (p *page) text(sel string) string {
	p.t.Helper()
	var s string
	if err := p.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.innerText : ""; })()`, sel), &s); err != nil {
		p.t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// waitText polls until the element at sel shows text matching want.
func (p *page) waitText(sel string, want *regexp.Regexp) string {
	p.t.Helper()
	deadline := time.Now().Add(waitFor)
	var got string
	for time.Now().Before(deadline) {
		if got = p.text(sel); want.MatchString(got) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatalf("%s shows %q, want it to match %q", sel, got, want)
	return ""
}

// shows polls until the element at sel shows text matching want, and
// says whether it did in time.
func (p *page) shows(sel string, want *regexp.Regexp) bool {
	p.t.Helper()
	for deadline := time.Now().Add(waitFor); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if want.MatchString(p.text(sel)) {
			return true
		}
	}
	return false
}

// waitUntil polls cond (a Go check) until it holds.
func waitUntil(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	last := ""
	for time.Now().Before(deadline) {
		ok, s := cond()
		if ok {
			return
		}
		last = s
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v (last: %s)", what, waitFor, last)
}

// termText is what the terminal's screen shows, one line per row.
func (p *page) termText() string {
	return p.text(".term .xterm-rows")
}

// typeInTerminal types s into the focused terminal: text as the browser's
// text input (what typing and IMEs produce), each "\r" as the Enter key.
// (chromedp.SendKeys sends both a key and a char event per letter, which
// the terminal rightly takes as two keystrokes.)
func (p *page) typeInTerminal(s string) {
	p.t.Helper()
	acts := []chromedp.Action{chromedp.Focus(`.term .xterm-helper-textarea`, chromedp.ByQuery)}
	for i, part := range strings.Split(s, "\r") {
		if i > 0 {
			acts = append(acts, chromedp.KeyEvent(kb.Enter))
		}
		if part != "" {
			acts = append(acts, input.InsertText(part))
		}
	}
	p.run("type "+s, acts...)
}
