package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// consoleSeq is the throughput command, as issue 19 names it.
const consoleSeq = "seq 1 1000000"

// benchConsole: the web console's terminal in headless Chromium (Debian's
// chromium, as the console's tests use). Keystroke to echo drawn on the
// page (xterm.js over the attach WebSocket) next to `ssh -tt`; `seq 1
// 1000000` through the browser terminal next to `outpost exec -tt`; and
// what a first visit downloads, compressed.
func benchConsole(ctx context.Context, e *env) ([]row, error) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		return []row{{Name: "console", Outpost: "skipped: no chromium (apt-get install chromium)"}}, nil
	}
	b, err := newBrowser(ctx, chromium, e.tls)
	if err != nil {
		return nil, err
	}
	defer b.close()
	if err := b.openProcesses(e); err != nil {
		return nil, err
	}
	load, err := b.firstLoad()
	if err != nil {
		return nil, err
	}
	rows := []row{{Name: "console first load (page, app, xterm.js), compressed", Outpost: fmt.Sprintf("%.1f KB", float64(load)/1024),
		Baseline: "300 KB budget", Ratio: fmt.Sprintf("%.2fx", float64(load)/(300<<10)), Goal: "≤ 1x", Met: yesNo(load <= 300<<10)}}

	n := max(e.n, 100)
	if err := b.start("sh -c '" + echoCommand + "'"); err != nil {
		return nil, err
	}
	if err := b.waitScreen("ready", 30*time.Second); err != nil {
		return nil, err
	}
	web, drawn, err := b.echoLatency(n)
	if err != nil {
		return nil, fmt.Errorf("browser echo: %w", err)
	}
	cfg, err := sshPeer(ctx)
	var ssh latencies
	if err == nil {
		ssh, err = echoLatency(exec.CommandContext(ctx, "ssh", "-F", cfg, "-o", "ControlMaster=no", "-o", "ControlPath=none", "-tt", "peer", echoCommand), n)
		if err != nil {
			return nil, fmt.Errorf("ssh -tt: %w", err)
		}
	}
	for _, m := range []struct {
		what string
		l    latencies
	}{{"received", web}, {"drawn", drawn}} {
		for _, p := range []float64{50, 99} {
			name := fmt.Sprintf("keystroke echo %s p%.0f, browser terminal vs `ssh -tt`", m.what, p)
			a := m.l.pct(p)
			if ssh == nil {
				rows = append(rows, row{Name: name, Outpost: ms(a), Baseline: "skipped: no sshd", Ratio: "—"})
				continue
			}
			s := ssh.pct(p)
			rows = append(rows, row{Name: name, Outpost: ms(a), Baseline: ms(s), Ratio: ratio(a, s), Goal: "≤ 1x", Met: yesNo(a <= s)})
		}
	}

	webGot, webSeq, err := b.runToEnd(consoleSeq, "1000000")
	if err != nil {
		return nil, fmt.Errorf("browser %s: %w", consoleSeq, err)
	}
	cliSeq, err := cliRun(ctx, e, strings.Fields(consoleSeq), 6888896) // seq's bytes, before CRs
	if err != nil {
		return nil, fmt.Errorf("outpost exec -tt %s: %w", consoleSeq, err)
	}
	rows = append(rows,
		row{Name: "`" + consoleSeq + "` received by the browser terminal vs `outpost exec -tt`", Outpost: ms(webGot), Baseline: ms(cliSeq),
			Ratio: ratio(webGot, cliSeq), Goal: "≤ 1x", Met: yesNo(webGot <= cliSeq)},
		row{Name: "`" + consoleSeq + "` drawn by the browser terminal vs `outpost exec -tt`", Outpost: ms(webSeq), Baseline: ms(cliSeq),
			Ratio: ratio(webSeq, cliSeq), Goal: "≤ 1x", Met: yesNo(webSeq <= cliSeq)})
	return rows, nil
}

// wsProbe records, in window.benchSeqAt, when the last seq control frame
// arrived on any WebSocket of the page.
const wsProbe = `(() => {
	const WS = window.WebSocket;
	window.benchSeqAt = 0;
	window.WebSocket = function (...args) {
		const ws = new WS(...args);
		ws.addEventListener('message', (ev) => { if (typeof ev.data === 'string' && ev.data.includes('"seq"')) window.benchSeqAt = performance.now(); });
		return ws;
	};
	window.WebSocket.prototype = WS.prototype;
	Object.assign(window.WebSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
})()`

// browser is one headless Chromium tab on the console.
type browser struct {
	ctx    context.Context
	cancel func()
	dir    string

	mu    sync.Mutex
	urls  map[network.RequestID]string
	bytes map[string]float64 // encoded bytes by URL path
}

func newBrowser(ctx context.Context, path string, tlsOn bool) (*browser, error) {
	dir, err := os.MkdirTemp("", "outpost-bench-chromium-")
	if err != nil {
		return nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
	}
	if tlsOn {
		// The bench's CA is made for this run: trust it by skipping checks
		// (loopback only).
		opts = append(opts, chromedp.Flag("ignore-certificate-errors", true))
	}
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	b := &browser{ctx: bctx, dir: dir, urls: map[network.RequestID]string{}, bytes: map[string]float64{},
		cancel: func() { cancelB(); cancelA(); _ = os.RemoveAll(dir) }}
	chromedp.ListenTarget(bctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.urls[ev.RequestID] = ev.Request.URL
		case *network.EventLoadingFinished:
			b.bytes[b.urls[ev.RequestID]] += ev.EncodedDataLength
		}
	})
	// The bench's own probe, not the console's: it notes when the page's
	// WebSocket receives a seq frame (the server's "output delivered up
	// to here", which follows the output in the same batch).
	probe := chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(wsProbe).Do(ctx)
		return err
	})
	if err := chromedp.Run(bctx, network.Enable(), network.SetCacheDisabled(true), probe); err != nil {
		b.close()
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	return b, nil
}

func (b *browser) close() { b.cancel() }

func (b *browser) run(d time.Duration, actions ...chromedp.Action) error {
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	return chromedp.Run(ctx, actions...)
}

func (b *browser) eval(d time.Duration, expr string, res any) error {
	return b.run(d, chromedp.Evaluate(expr, res, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
}

// openProcesses signs in as the console does after a sign-in (the token in
// sessionStorage) and opens the processes page of the bench's agent.
func (b *browser) openProcesses(e *env) error {
	state, _ := json.Marshal(map[string]any{"ws": e.ws, "token": e.srv.AdminToken(), "target": map[string]string{"kind": "agent", "id": e.id}})
	if err := b.run(30*time.Second, chromedp.Navigate(e.srv.URL()+"/"),
		chromedp.Evaluate(fmt.Sprintf(`sessionStorage.setItem("outpost.console", %q)`, state), nil),
		chromedp.Navigate(e.srv.URL()+"/#/processes")); err != nil {
		return err
	}
	// Count from here: one load of the page (the cache is off).
	b.mu.Lock()
	clear(b.bytes)
	b.mu.Unlock()
	return b.run(30*time.Second, chromedp.Reload(), chromedp.WaitVisible(`input[name="command"]`, chromedp.ByQuery))
}

// start starts command in a terminal from the processes page.
func (b *browser) start(command string) error {
	js := fmt.Sprintf(`(() => { document.querySelector('input[name="command"]').value = %q;
		document.querySelector('form button[type="submit"]').click(); })()`, command)
	return b.run(10*time.Second, chromedp.Evaluate(js, nil))
}

// waitScreen waits until the terminal's screen shows s.
func (b *browser) waitScreen(s string, d time.Duration) error {
	js := fmt.Sprintf(`new Promise((res, rej) => { const t0 = Date.now(); const tick = () => {
		const r = document.querySelector('.term .xterm-rows');
		if (r && r.textContent.includes(%q)) return res(true);
		if (Date.now() - t0 > %d) return rej(new Error('screen never showed it'));
		setTimeout(tick, 5); }; tick(); })`, s, d.Milliseconds())
	var ok bool
	return b.eval(d+5*time.Second, js, &ok)
}

// firstLoad is what the console's own files cost, compressed (page,
// scripts, styles, xterm.js once a terminal opened), API calls not counted.
func (b *browser) firstLoad() (int, error) {
	if err := b.start("true"); err != nil {
		return 0, err
	}
	if err := b.run(30*time.Second, chromedp.WaitVisible(`.term .xterm-rows`, chromedp.ByQuery)); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	total := 0.0
	for u, n := range b.bytes {
		if !strings.Contains(u, "/v1/") { // the page and its files, not API calls
			total += n
		}
	}
	return int(total), nil
}

// echoLatency types n characters into the terminal, one at a time, each
// timed in the page from the input event to its echo received (the seq
// frame after it) and to its echo drawn on the screen (xterm.js draws on
// the next animation frame).
func (b *browser) echoLatency(n int) (received, drawn latencies, err error) {
	// Any change of the screen's text is the echo: nothing else writes.
	const js = `new Promise((res, rej) => {
		const rows = document.querySelector('.term .xterm-rows');
		const ta = document.querySelector('.term .xterm-helper-textarea');
		const before = rows.textContent;
		const t0 = performance.now();
		const obs = new MutationObserver(() => { if (rows.textContent !== before) {
			obs.disconnect(); clearTimeout(tm); const t1 = performance.now();
			res([window.benchSeqAt > t0 ? window.benchSeqAt - t0 : t1 - t0, t1 - t0]); } });
		obs.observe(rows, { subtree: true, childList: true, characterData: true });
		const tm = setTimeout(() => { obs.disconnect(); rej(new Error('no echo in 10 s')); }, 10000);
		ta.dispatchEvent(new InputEvent('input', { data: 'x', inputType: 'insertText', bubbles: true }));
	})`
	var got latencies
	for i := 0; i < n; i++ {
		var msec [2]float64
		if err := b.eval(15*time.Second, js, &msec); err != nil {
			return nil, nil, err
		}
		got = append(got, time.Duration(msec[0]*float64(time.Millisecond)))
		drawn = append(drawn, time.Duration(msec[1]*float64(time.Millisecond)))
	}
	return got, drawn, nil
}

// runToEnd starts command in a new terminal and times it, in the page,
// from the click on Start until the last output was received, and until
// the terminal has drawn it all and the process closed; the screen must
// then show last.
func (b *browser) runToEnd(command, last string) (received, drawn time.Duration, err error) {
	js := fmt.Sprintf(`new Promise((res, rej) => {
		document.querySelector('input[name="command"]').value = %q;
		const t0 = performance.now();
		document.querySelector('form button[type="submit"]').click();
		const tick = () => {
			const t = document.querySelector('.term');
			if (t && t.dataset.closed === 'true') return requestAnimationFrame(() => res([window.benchSeqAt - t0, performance.now() - t0]));
			if (performance.now() - t0 > 300000) return rej(new Error('not closed in 300 s'));
			setTimeout(tick, 2);
		};
		tick();
	})`, command)
	var msec [2]float64
	if err := b.eval(310*time.Second, js, &msec); err != nil {
		return 0, 0, err
	}
	if err := b.waitScreen(last, 5*time.Second); err != nil {
		return 0, 0, fmt.Errorf("the screen does not end with %q: %w", last, err)
	}
	return time.Duration(msec[0] * float64(time.Millisecond)), time.Duration(msec[1] * float64(time.Millisecond)), nil
}

// cliRun times `outpost exec -tt -- argv` to its exit, output read and
// dropped as a terminal would take it; fewer than minBytes is an error.
func cliRun(ctx context.Context, e *env, argv []string, minBytes int64) (time.Duration, error) {
	bin, err := outpostBinary(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := os.Stat(bin); err != nil {
		bin = filepath.Join(e.dir, "outpost")
		build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/outpost")
		if out, err := build.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("build outpost: %v\n%s", err, out)
		}
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"exec", "-tt", "--agent", e.id, "--"}, argv...)...)
	setParentDeath(cmd)
	cmd.Env = append(os.Environ(), "OUTPOST_URL="+e.srv.URL(), "OUTPOST_TOKEN="+e.srv.AdminToken(), "OUTPOST_WORKSPACE="+e.ws)
	if e.tls {
		cmd.Env = append(cmd.Env, "OUTPOST_CA_FILE="+e.srv.CAFile())
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	n, _ := io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	if n < minBytes {
		return 0, fmt.Errorf("only %d bytes of output, want %d or more", n, minBytes)
	}
	return d, nil
}
