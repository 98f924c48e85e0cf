package console_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/outposttest"
)

// TestConsoleInBrowser drives the console in headless Chromium against a
// real control plane and a real agent, step by step as a user would, and
// checks what the page shows at each step.
func TestConsoleInBrowser(t *testing.T) {
	env := outposttest.New(t, outposttest.Config{})
	p := newPage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	signIn(t, p, env)

	// An agent enrolled and started while the page is open shows up online.
	root := t.TempDir()
	laptop, err := env.RealAgent(ctx, "laptop", root)
	if err != nil {
		t.Fatalf("real agent: %v", err)
	}
	p.waitText(`tr[data-agent="laptop"] .status`, regexp.MustCompile(`^online$`))
	row := p.text(`tr[data-agent="laptop"]`)
	for _, want := range []string{"linux/", "pty"} {
		if !strings.Contains(row, want) {
			t.Errorf("agent row %q lacks %q", row, want)
		}
	}

	terminalSteps(t, p, laptop)
	fileSteps(t, p, root)
	swapSteps(t, p, env)
	carrySteps(t, p, env, root)
	portSteps(t, p, env)
	p.checkClean()
}

func signIn(t *testing.T, p *page, env *outposttest.Env) {
	t.Helper()
	p.run("open the console", chromedp.Navigate(env.Server.URL()+"/"), chromedp.WaitVisible(`input[name="token"]`, chromedp.ByQuery))
	// A wrong token is refused, with a message.
	p.run("wrong token", chromedp.SendKeys(`input[name="token"]`, "not-the-token"+kb.Enter, chromedp.ByQuery))
	p.waitText(`[role="alert"]`, regexp.MustCompile(`token was not accepted`))
	p.expectProblem(regexp.MustCompile(`status of 401 .*/v1/workspaces/default\)$`))
	p.run("sign in", chromedp.Evaluate(`document.querySelector('input[name="token"]').value = ""`, nil),
		chromedp.SendKeys(`input[name="token"]`, env.Server.AdminToken()+kb.Enter, chromedp.ByQuery))
	p.waitText(`tr[data-agent="mock"] .status`, regexp.MustCompile(`^online$`))
	// The policy is live: an injected inline script does not run, an
	// injected <style> without the nonce is refused, and the page reports
	// both (so checkClean below would see any violation of the console's own).
	var ran bool
	if err := p.eval(`(() => { const s = document.createElement('script'); s.textContent = 'window.injected = true'; document.head.appendChild(s);
		document.head.insertAdjacentHTML('beforeend', '<style>body{}</style>'); return window.injected === true; })()`, &ran); err != nil || ran {
		t.Errorf("an injected inline script ran (%v)", err)
	}
	waitUntil(t, "violations reported", func() (bool, string) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.problems) >= 2, strings.Join(p.problems, "; ")
	})
	p.expectProblem(regexp.MustCompile(`Executing inline script violates .*Content Security Policy`))
	p.expectProblem(regexp.MustCompile(`Applying inline style violates .*Content Security Policy`))
	// The token is in this tab's session storage, not in a cookie or URL.
	var cookies, url string
	if err := p.eval(`document.cookie`, &cookies); err != nil || cookies != "" {
		t.Errorf("document.cookie = %q (%v), want none", cookies, err)
	}
	if err := p.eval(`location.href`, &url); err != nil || strings.Contains(url, env.Server.AdminToken()) {
		t.Errorf("the URL %q holds the token (%v)", url, err)
	}
}

// terminalSteps: a shell in the browser terminal runs echo, follows a
// resize, is interrupted with Ctrl-C, resumes after reconnects without
// losing or repeating output, and is killed.
func terminalSteps(t *testing.T, p *page, laptop *client.Target) {
	t.Helper()
	p.run("open the agent", chromedp.Click(`tr[data-agent="laptop"] button`, chromedp.ByQuery))
	p.waitText(`main h1`, regexp.MustCompile(`^Processes$`))
	p.run("start a shell",
		chromedp.Evaluate(`document.querySelector('input[name="command"]').value = "bash --norc --noprofile -i"`, nil),
		chromedp.Click(`form button[type="submit"]`, chromedp.ByQuery))
	p.waitText(`.term-bar [role="status"]`, regexp.MustCompile(`^connected$`))
	typeIn := func(s string) {
		t.Helper()
		p.typeInTerminal(s)
	}
	typeIn("echo hello-$((6*7))\r")
	p.waitText(`.term .xterm-rows`, regexp.MustCompile(`(?m)^hello-42\s*$`))

	// Resize the window: the terminal fits itself and the PTY follows.
	before := p.text(`.term-bar .dims`)
	p.run("resize", chromedp.EmulateViewport(900, 600))
	dims := p.waitText(`.term-bar .dims`, regexp.MustCompile(`^\d+×\d+$`))
	waitUntil(t, "terminal resized", func() (bool, string) {
		dims = p.text(`.term-bar .dims`)
		return dims != before, dims
	})
	var cols, rows int
	if _, err := fmt.Sscanf(dims, "%d×%d", &cols, &rows); err != nil {
		t.Fatalf("dims %q: %v", dims, err)
	}
	typeIn("clear; stty size\r")
	p.waitText(`.term .xterm-rows`, regexp.MustCompile(fmt.Sprintf(`(?m)^%d %d\s*$`, rows, cols)))

	// Ctrl-C interrupts a running sleep: bash abandons the rest of the line.
	// An unusual duration: this machine may run other sleeps.
	typeIn("clear; sleep 61.789; echo not-interrupted\r")
	waitUntil(t, "sleep running", func() (bool, string) {
		r, err := laptop.Exec(context.Background(), client.ExecRequest{Argv: []string{"pgrep", "-f", "^sleep 61.789$"}})
		if err != nil {
			return false, err.Error()
		}
		return r.ExitCode == 0, r.Stdout
	})
	p.run("Ctrl-C", chromedp.KeyEvent("c", chromedp.KeyModifiers(input.ModifierCtrl)))
	typeIn("echo status=$?\r")
	screen := p.waitText(`.term .xterm-rows`, regexp.MustCompile(`(?m)^status=130\s*$`))
	if regexp.MustCompile(`(?m)^not-interrupted\s*$`).MatchString(screen) {
		t.Errorf("the line went on after Ctrl-C:\n%s", screen)
	}

	// Reconnect twice while output flows: every number shows, once, in order.
	// perl (Debian's perl-base is essential) writes a number every 10 ms
	// without forking: a bash loop of printf and sleep stalled a few times
	// under -race at load ~30, bash in do_wait with no child listed, after
	// every byte it wrote had reached the page.
	typeIn(`clear; perl -e '$|=1; for (1..300) { print "$_ "; select(undef, undef, undef, 0.01) } print "\nend-of-count\n"'` + "\r")
	for i := 0; i < 2; i++ {
		time.Sleep(600 * time.Millisecond) // mid-stream, by design
		p.run("reconnect", chromedp.Click(`//button[text()="Reconnect"]`))
		p.waitText(`.term-bar [role="status"]`, regexp.MustCompile(`^connected$`))
	}
	if !p.shows(`.term .xterm-rows`, regexp.MustCompile(`(?m)^end-of-count\s*$`)) {
		// Say where the output stopped: in the agent, or on the way here.
		id := p.text(`tbody tr[data-proc] td code`)
		out, err := laptop.ReadOutput(context.Background(), id, 0, 1<<20, 0)
		var seq string
		_ = p.eval(`document.querySelector('.term').dataset.seq`, &seq)
		if err == nil {
			var all []byte
			for _, c := range out.Chunks {
				all = append(all, c.Data...)
			}
			t.Logf("the agent has %d bytes up to seq %d (exited %v), ending %q; the page is at seq %s", len(all), out.NextSeq, out.Exited, all[max(0, len(all)-80):], seq)
		}
		if ps, err := laptop.Exec(context.Background(), client.ExecRequest{Command: "ps -e -o pid,ppid,stat,wchan:32,args | grep -v ' ps -e'"}); err == nil {
			t.Logf("processes on the agent:\n%s", ps.Stdout)
		}
		t.Fatalf("the count never ended on the screen (%v):\n%s", err, p.termText())
	}
	screen = p.termText()
	// Rows wrap mid-number: join them before reading the numbers.
	flat := strings.Join(strings.Fields(strings.ReplaceAll(screen, "\n", "")), " ")
	var want strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&want, "%d ", i)
	}
	if got := strings.Count(flat, strings.TrimSpace(want.String())); got != 1 {
		t.Errorf("after reconnects the count shows %d times, want once; screen:\n%s", got, screen)
	}

	// Kill from the list: the process ends and the list says so.
	id := p.text(`tbody tr[data-proc] td code`)
	p.run("kill", chromedp.Click(fmt.Sprintf(`tr[data-proc=%q] button.danger`, id), chromedp.ByQuery))
	p.waitText(fmt.Sprintf(`tr[data-proc=%q] .pstate`, id), regexp.MustCompile(`^exited`))
	p.waitText(`.term-bar [role="status"]`, regexp.MustCompile(`^exited`))
}

// fileSteps: upload with progress, a name that is markup shown as text,
// download, delete.
func fileSteps(t *testing.T, p *page, root string) {
	t.Helper()
	p.run("files", chromedp.Click(`//nav//a[text()="Files"]`))
	p.waitText(`main h1`, regexp.MustCompile(`^Files$`))
	src := filepath.Join(t.TempDir(), "data.bin")
	data := make([]byte, 3<<20)
	_, _ = rand.Read(data)
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	p.run("upload", chromedp.SetUploadFiles(`input[name="upload"]`, []string{src}, chromedp.ByQuery),
		chromedp.Click(`//button[text()="Upload"]`))
	p.waitText(`main [role="status"]`, regexp.MustCompile(`^Uploaded data\.bin \(3\.0 MiB\)\.$`))
	var prog float64
	if err := p.eval(`document.querySelector('progress').value`, &prog); err != nil || prog != float64(len(data)) {
		t.Errorf("progress shows %v (%v), want %d", prog, err, len(data))
	}
	if got, err := os.ReadFile(filepath.Join(root, "data.bin")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("uploaded file on the agent: %d bytes, %v; want the 3 MiB sent", len(got), err)
	}
	p.waitText(`tr[data-path="data.bin"]`, regexp.MustCompile(`3\.0 MiB`))

	// A file name that is markup is shown as text.
	evil := `<img src=x onerror=alert(1)>.txt`
	if err := os.WriteFile(filepath.Join(root, evil), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.run("refresh", chromedp.Click(`//a[text()="(root)"]`))
	p.waitText(`main table`, regexp.MustCompile(regexp.QuoteMeta(evil)))
	var imgs int
	if err := p.eval(`document.querySelectorAll('main img').length`, &imgs); err != nil || imgs != 0 {
		t.Errorf("%d img elements in the page (%v): a file name was parsed as markup", imgs, err)
	}

	p.run("download", chromedp.Click(`tr[data-path="data.bin"] button[aria-label^="Download"]`, chromedp.ByQuery))
	waitUntil(t, "download saved", func() (bool, string) {
		got, err := os.ReadFile(filepath.Join(p.dl, "data.bin"))
		return err == nil && bytes.Equal(got, data), fmt.Sprintf("%d bytes, %v", len(got), err)
	})

	del := `tr[data-path="data.bin"] button.danger`
	p.run("delete", chromedp.Click(del, chromedp.ByQuery))
	p.waitText(del, regexp.MustCompile(`^Confirm delete$`))
	p.run("confirm delete", chromedp.Click(del, chromedp.ByQuery))
	p.waitText(`main [role="status"]`, regexp.MustCompile(`^Deleted data\.bin\.$`))
	waitUntil(t, "row gone", func() (bool, string) {
		s := p.text(`tr[data-path="data.bin"]`)
		return s == "", s
	})
	if _, err := os.Stat(filepath.Join(root, "data.bin")); !os.IsNotExist(err) {
		t.Errorf("data.bin still on the agent: %v", err)
	}
}

// swapSteps: a session's card shows its backends and epoch, and Swap moves
// the pointer.
func swapSteps(t *testing.T, p *page, env *outposttest.Env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	s, err := env.Client.CreateSession(ctx, "", client.CreateSessionRequest{ID: "work", Active: "laptop", Backends: map[string]client.SessionBackend{
		"laptop": {Kind: client.KindAgent, Agent: "laptop"},
		"spare":  {Kind: client.KindAgent, Agent: "mock"},
	}})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	p.run("sessions", chromedp.Click(`//nav//a[text()="Sessions"]`))
	card := `section[data-session="work"]`
	p.waitText(card+` .active`, regexp.MustCompile(`^laptop$`))
	p.waitText(card+` .epoch`, regexp.MustCompile(fmt.Sprintf(`^%d$`, s.Epoch)))
	p.run("swap", chromedp.Click(card+` button[type="submit"]`, chromedp.ByQuery))
	p.waitText(`main > p[role="status"]`, regexp.MustCompile(fmt.Sprintf(`^Swapped work to spare, epoch %d\.$`, s.Epoch+1)))
	p.waitText(card+` .active`, regexp.MustCompile(`^spare$`))
	got, err := env.Client.GetSession(ctx, "", "work")
	if err != nil || got.Active != "spare" || got.Epoch != s.Epoch+1 {
		t.Errorf("session after the swap: %+v, %v; want spare at epoch %d", got, err, s.Epoch+1)
	}
}

// TestConsoleWorkspaceKey: a workspace key signs in to its own workspace
// and sees its agents; another workspace is refused with a message; Sign
// out forgets the token.
func TestConsoleWorkspaceKey(t *testing.T) {
	env := outposttest.New(t, outposttest.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := env.Client.CreateWorkspace(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	key, err := env.Client.CreateKey(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.run("open", chromedp.Navigate(env.Server.URL()+"/"), chromedp.WaitVisible(`input[name="token"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('input[name="workspace"]').value = "other"`, nil),
		chromedp.SendKeys(`input[name="token"]`, key+kb.Enter, chromedp.ByQuery))
	p.waitText(`[role="alert"]`, regexp.MustCompile(`^This token is not for that workspace\.$`))
	p.expectProblem(regexp.MustCompile(`status of 403 .*/v1/workspaces/other\)$`))
	p.run("the right workspace", chromedp.Evaluate(`document.querySelector('input[name="workspace"]').value = "default"`, nil),
		chromedp.SendKeys(`input[name="token"]`, kb.Enter, chromedp.ByQuery))
	p.waitText(`tr[data-agent="mock"] .status`, regexp.MustCompile(`^online$`))
	p.waitText(`header`, regexp.MustCompile(`workspace default`))
	p.run("sign out", chromedp.Click(`//button[text()="Sign out"]`))
	p.run("reload", chromedp.Reload(), chromedp.WaitVisible(`input[name="token"]`, chromedp.ByQuery))
	var stored string
	if err := p.eval(`JSON.stringify(sessionStorage)`, &stored); err != nil || strings.Contains(stored, key) {
		t.Errorf("after signing out, session storage holds %q (%v)", stored, err)
	}
	p.checkClean()
}
