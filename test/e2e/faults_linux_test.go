package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// The fault tests: an agent behind a real link (a veth into a namespace of
// its own, see netns_linux_test.go) that is cut, and behind a fault proxy
// (toxiproxy, in this process) that adds latency, limits bandwidth, resets
// connections and holds them half-open. They check the contract users rely
// on while their laptop's network misbehaves:
//
//   - an enrolled agent cut off is `reconnecting`, never 404 and never
//     `offline` inside the 30 s reconnect window, and `online` again within
//     2 s of its link coming back;
//   - calls while it is gone answer 503 within the window, never hang;
//   - a process keeps running through the outage and its output arrives
//     complete (sha256) through the events API;
//   - a half-open link (everything silently dropped) is noticed within the
//     ping window.
//
// The bounds asserted are the contract's, never tighter; the figures
// measured are logged (go test -v) for BENCHMARKS.md.
const (
	cutFor = 20 * time.Second
	// backWithin is the contract: online again this soon after the link is.
	backWithin = 2 * time.Second
	// answerWithin bounds a call while the agent is gone: its silent
	// connection is closed within 15 s (over wss the control plane closes
	// one it has heard nothing from for 12 s; on the native port the
	// server's pings, 5 s apart with one unanswered, close it within 15 s),
	// the disconnect event ends its presence and with it the call (or no
	// responders ends it at once); plus slack for a busy machine; inside
	// the 30 s reconnect window.
	answerWithin = 20 * time.Second
	// agentHalfOpenWithin and halfOpenWithin are the ping windows (plus
	// slack for a busy machine): the agent pings every 5 s and gives up on
	// a ping unanswered for 5 s (5–10 s); the control plane closes the
	// connection of an agent it has not heard from for 12 s over wss, and
	// on the native port the server pings an agent it has not heard from
	// for 5 s and closes it when the next tick finds the ping unanswered
	// (within 15 s), which the control plane hears.
	agentHalfOpenWithin = 12 * time.Second
	halfOpenWithin      = 17 * time.Second
)

// faultEnv is a link, a control plane whose NATS listens on the link's
// root side (or on a fault proxy there), and one agent in the namespace.
type faultEnv struct {
	t      *testing.T
	tr     transport
	link   *netLink
	proxy  *faultProxy // nil without one
	cp     *controlPlane
	ws, id string
	agent  *proc
	target *client.Target
	status *statusWatch
}

// transport is how the agent reaches the control plane in a fault test.
type transport string

const (
	// overWSS is how users deploy across networks: `serve
	// --tls-self-signed`, the agent on wss:// through the API's one port.
	overWSS transport = "wss"
	// overNATS is native NATS in clear (--insecure-plaintext), for a
	// private network.
	overNATS transport = "nats"
)

func newFaultEnv(t *testing.T, tr transport, withProxy bool) *faultEnv {
	t.Helper()
	l := newNetLink(t)
	e := &faultEnv{t: t, tr: tr, link: l, ws: "faults", id: "laptop"}
	// The control plane's port for agents is on the link's root side:
	// with TLS the API's (it answers this process there even while the
	// link is down: the address stays local), else native NATS's.
	cfg := cpConfig{natsHost: l.hostIP, natsPort: freePort(t), tls: tr == overWSS}
	if withProxy {
		// The proxy listens on the link's root side too: the namespace
		// reaches nothing else (not this namespace's loopback). The
		// API's port is not taken yet: pick it for the proxy's upstream.
		cfg.httpPort = freePort(t)
		cp := &controlPlane{cfg: cfg, natsPort: cfg.natsPort, httpPort: cfg.httpPort}
		e.proxy = startFaultProxy(t, net.JoinHostPort(l.hostIP, "0"), cp.agentAddr())
		cfg.agentURL = "nats://" + e.proxy.addr()
		if cfg.tls {
			cfg.agentURL = "wss://" + e.proxy.addr() + "/v1/nats"
		}
	}
	e.cp = startControlPlaneWith(t, cfg)
	e.cp.workspace(e.ws)
	config := e.cp.enroll(e.ws, e.id, "")
	root := t.TempDir()
	e.agent = startCommand(t, nil, l.command(outpostBin, "agent", "run", "--config", config, "--root", root))
	e.cp.waitStatus(e.ws, e.id, "online")
	e.target = e.cp.cl.Agent(e.ws, e.id)
	e.status = watchStatus(t, e.cp, e.ws, e.id)
	return e
}

// TestFaultLinkCut cuts the agent's link for 20 s while a process streams
// output and calls are made, then brings it back.
func TestFaultLinkCut(t *testing.T) {
	t.Parallel()
	for _, tr := range []transport{overWSS, overNATS} {
		t.Run(string(tr), func(t *testing.T) {
			t.Parallel()
			testLinkCut(t, tr)
		})
	}
}

func testLinkCut(t *testing.T, tr transport) {
	e := newFaultEnv(t, tr, false)
	stream := startPacedStream(t, e.target, "cut", 1000, 25*time.Millisecond)
	stream.waitBytes(t, 50<<10)

	cutAt := time.Now()
	e.link.cut()
	restored := false
	defer func() {
		if !restored {
			e.link.restore()
		}
	}()
	calls := callsAt(e.target, cutAt, 500*time.Millisecond, 8*time.Second, 15*time.Second)
	reconnectingAt := e.status.waitFor(t, "reconnecting", cutAt, cutFor)
	time.Sleep(time.Until(cutAt.Add(cutFor)))
	upAt := time.Now()
	e.link.restore()
	restored = true
	onlineAt := e.status.waitFor(t, "online", upAt, 30*time.Second)

	t.Logf("%s: 20 s cut: reconnecting %v after the cut; online %v after the link came back",
		e.tr, reconnectingAt.Sub(cutAt).Round(time.Millisecond), onlineAt.Sub(upAt).Round(time.Millisecond))
	if back := onlineAt.Sub(upAt); back > backWithin {
		t.Errorf("online %v after the link came back, want within %v\nagent log:\n%s", back, backWithin, e.agent.output())
	}
	checkCalls(t, calls)
	e.status.check(t, cutAt, "reconnecting", "online")
	if _, err := e.target.Exec(ctx(t), client.ExecRequest{Argv: []string{"true"}}); err != nil {
		t.Errorf("exec after the link came back: %v", err)
	}
	stream.check(t)
}

// TestFaultProxy runs the agent's link through a fault proxy: latency with
// a bandwidth limit, a reset, then a half-open link, while a process
// streams output through all of it.
func TestFaultProxy(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t, overWSS, true)
	stream := startPacedStream(t, e.target, "proxied", 800, 25*time.Millisecond)
	stream.waitBytes(t, 20<<10)
	start := time.Now()

	t.Run("latency and bandwidth", func(t *testing.T) {
		e.proxy.add(t, "latency", "latency", "downstream", map[string]any{"latency": 150, "jitter": 50})
		e.proxy.add(t, "latency_up", "latency", "upstream", map[string]any{"latency": 150, "jitter": 50})
		e.proxy.add(t, "bandwidth_up", "bandwidth", "upstream", map[string]any{"rate": 256}) // KB/s
		defer e.proxy.removeAll(t)
		from := time.Now()
		began := time.Now()
		if _, err := e.target.Exec(ctx(t), client.ExecRequest{Argv: []string{"true"}}); err != nil {
			t.Fatalf("exec through 150 ms each way: %v", err)
		}
		execTook := time.Since(began)
		// A burst of output that fills the link for ten seconds: 2.7 MB,
		// more than a read's reply may carry (1 MiB by default). The
		// agent's pings and pongs must not starve behind it: it stays
		// connected throughout.
		mark := e.agent.mark()
		began = time.Now()
		burst := startBurst(t, e.target, "burst", 400000)
		burst.check(t)
		t.Logf("latency 150±50 ms each way, 256 KB/s up: exec true %v; %d bytes of output in %v",
			execTook.Round(time.Millisecond), burst.n.Load(), time.Since(began).Round(time.Millisecond))
		e.status.check(t, from, "online")
		if log := e.agent.output()[mark:]; strings.Contains(log, "disconnected from NATS") {
			t.Errorf("the agent lost its connection during the burst:\n%s", log)
		}
	})

	t.Run("reset", func(t *testing.T) {
		mark := e.agent.mark()
		from := time.Now()
		e.proxy.add(t, "reset", "reset_peer", "upstream", map[string]any{"timeout": 0})
		defer e.proxy.removeAll(t)
		cutAt := e.agent.waitLog(t, mark, "disconnected from NATS", 10*time.Second)
		e.proxy.removeAll(t)
		backAt := e.agent.waitLog(t, mark, "reconnected to NATS", 20*time.Second)
		e.status.waitFor(t, "online", backAt, 10*time.Second)
		t.Logf("reset: the agent saw it %v after the toxic, reconnected %v after that",
			cutAt.Sub(from).Round(time.Millisecond), backAt.Sub(cutAt).Round(time.Millisecond))
		e.status.check(t, from, "online", "reconnecting")
	})

	t.Run("half-open", func(t *testing.T) {
		mark := e.agent.mark()
		from := time.Now()
		e.proxy.add(t, "blackhole_up", "timeout", "upstream", map[string]any{"timeout": 0})
		e.proxy.add(t, "blackhole_down", "timeout", "downstream", map[string]any{"timeout": 0})
		defer e.proxy.removeAll(t)
		calls := callsAt(e.target, from, 7*time.Second)
		agentSaw := e.agent.waitLog(t, mark, "disconnected from NATS", 30*time.Second)
		reconnectingAt := e.status.waitFor(t, "reconnecting", from, 30*time.Second)
		t.Logf("half-open: the agent noticed after %v, the control plane after %v",
			agentSaw.Sub(from).Round(time.Millisecond), reconnectingAt.Sub(from).Round(time.Millisecond))
		if d := agentSaw.Sub(from); d > agentHalfOpenWithin {
			t.Errorf("the agent noticed the half-open link after %v, want within %v", d, agentHalfOpenWithin)
		}
		if d := reconnectingAt.Sub(from); d > halfOpenWithin {
			t.Errorf("the control plane noticed the half-open link after %v, want within %v", d, halfOpenWithin)
		}
		checkCalls(t, calls)
		healedAt := time.Now()
		e.proxy.removeAll(t)
		onlineAt := e.status.waitFor(t, "online", healedAt, 30*time.Second)
		t.Logf("half-open healed: online again after %v (the agent's backoff; nothing on the machine changed)",
			onlineAt.Sub(healedAt).Round(time.Millisecond))
		e.status.check(t, from, "online", "reconnecting")
	})

	e.status.check(t, start, "online", "reconnecting")
	stream.check(t)
}

// faultProxy is a toxiproxy proxy run in this process.
type faultProxy struct {
	p *toxiproxy.Proxy
}

func startFaultProxy(t testing.TB, listen, upstream string) *faultProxy {
	t.Helper()
	zerolog.SetGlobalLevel(zerolog.Disabled) // its toxics log through the global logger
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "nats", listen, upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("fault proxy: %v", err)
	}
	t.Cleanup(p.Stop)
	return &faultProxy{p: p}
}

func (f *faultProxy) addr() string { return f.p.Listen }

// add adds a toxic: typ is toxiproxy's (latency, bandwidth, reset_peer,
// timeout, ...), stream "upstream" (agent to NATS) or "downstream".
func (f *faultProxy) add(t testing.TB, name, typ, stream string, attrs map[string]any) {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, typ, stream, jsonOf(attrs))
	if _, err := f.p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		t.Fatalf("add toxic %s: %v", name, err)
	}
}

// removeAll removes every toxic.
func (f *faultProxy) removeAll(t testing.TB) {
	t.Helper()
	f.p.Toxics.ResetToxics(context.Background())
}

func jsonOf(m map[string]any) string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%q:%v", k, v))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// statusWatch polls an agent's status through the API and keeps every
// answer, so a test can tell when it changed and that it never was what
// it must not be.
type statusWatch struct {
	mu      sync.Mutex
	samples []statusSample
	changed chan struct{}
}

type statusSample struct {
	at     time.Time
	status string
	err    error
}

const statusEvery = 50 * time.Millisecond

func watchStatus(t *testing.T, cp *controlPlane, ws, id string) *statusWatch {
	w := &statusWatch{changed: make(chan struct{})}
	c, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c.Err() == nil {
			rc, rcancel := context.WithTimeout(c, 10*time.Second)
			a, err := cp.cl.GetAgent(rc, ws, id)
			rcancel()
			if c.Err() != nil {
				return
			}
			s := statusSample{at: time.Now(), err: err}
			if err == nil {
				s.status = a.Status
			}
			w.mu.Lock()
			w.samples = append(w.samples, s)
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
			select {
			case <-c.Done():
			case <-time.After(statusEvery):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// waitFor returns when a sample taken at or after from first said status.
func (w *statusWatch) waitFor(t testing.TB, status string, from time.Time, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		for _, s := range w.samples {
			if !s.at.Before(from) && s.err == nil && s.status == status {
				w.mu.Unlock()
				return s.at
			}
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("agent not %s within %v: %s", status, timeout, w.since(from))
		}
	}
}

// check fails the test if any answer since from was an error (404 above
// all) or a status not in allowed.
func (w *statusWatch) check(t testing.TB, from time.Time, allowed ...string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.samples {
		if s.at.Before(from) {
			continue
		}
		if s.err != nil {
			t.Errorf("GET agent at +%v: %v (an enrolled agent is never 404 and the control plane always answers)", s.at.Sub(from).Round(time.Millisecond), s.err)
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || s.status == a
		}
		if !ok {
			t.Errorf("agent %s at +%v, want one of %v", s.status, s.at.Sub(from).Round(time.Millisecond), allowed)
		}
	}
}

// since renders the statuses since from, one line per change.
func (w *statusWatch) since(from time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	last := "?"
	for _, s := range w.samples {
		if s.at.Before(from) {
			continue
		}
		now := s.status
		if s.err != nil {
			now = "error: " + s.err.Error()
		}
		if now != last {
			fmt.Fprintf(&b, "\n  +%v %s", s.at.Sub(from).Round(time.Millisecond), now)
			last = now
		}
	}
	return b.String()
}

// callResult is one call made while the agent was unreachable.
type callResult struct {
	at   time.Duration // after the fault began
	took time.Duration
	err  error
}

// callsAt makes an exec call at each offset after from, in the background;
// the returned channel gives their results once all are done.
func callsAt(target *client.Target, from time.Time, offsets ...time.Duration) <-chan []callResult {
	out := make(chan []callResult, 1)
	go func() {
		res := make([]callResult, len(offsets))
		var wg sync.WaitGroup
		for i, off := range offsets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Until(from.Add(off)))
				c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				began := time.Now()
				_, err := target.Exec(c, client.ExecRequest{Argv: []string{"true"}})
				res[i] = callResult{at: off, took: time.Since(began), err: err}
			}()
		}
		wg.Wait()
		out <- res
	}()
	return out
}

// checkCalls wants every call to have answered 503 (agent offline or
// reconnecting) within answerWithin.
func checkCalls(t testing.TB, calls <-chan []callResult) {
	t.Helper()
	var res []callResult
	select {
	case res = <-calls:
	case <-time.After(90 * time.Second):
		t.Fatal("calls made while the agent was unreachable never returned")
	}
	var figures []string
	for _, c := range res {
		figures = append(figures, fmt.Sprintf("at +%v: %v", c.at, c.took.Round(time.Millisecond)))
		we := wire.AsError(c.err)
		switch {
		case c.err == nil:
			t.Errorf("call at +%v succeeded while the agent was unreachable", c.at)
		case we.Code != wire.CodeUnavailable:
			t.Errorf("call at +%v: %v, want 503 unavailable", c.at, c.err)
		case we.Reason != wire.ReasonAgentReconnecting && we.Reason != wire.ReasonAgentOffline:
			t.Errorf("call at +%v: reason %q, want agent_reconnecting or agent_offline", c.at, we.Reason)
		}
		if c.took > answerWithin {
			t.Errorf("call at +%v answered after %v, want within %v", c.at, c.took, answerWithin)
		}
	}
	t.Logf("calls while unreachable answered 503: %s", strings.Join(figures, ", "))
}

// pacedStream is a process's output read through the events API on a
// goroutine of its own, resuming from the last event after every break.
type pacedStream struct {
	target *client.Target
	id     string
	want   []byte
	n      atomic.Int64 // bytes read so far
	done   chan struct{}
	// The rest is the reader's until done is closed.
	sum      hash.Hash
	last     uint64
	dropped  int64
	exitCode int
	closed   bool
	breaks   int
	err      error
}

const streamPad = 1000

// startPacedStream starts a process that prints lines lines of about 1 KB,
// one every pace, and reads it.
func startPacedStream(t *testing.T, target *client.Target, id string, lines int, pace time.Duration) *pacedStream {
	t.Helper()
	pad := strings.Repeat("x", streamPad)
	var want bytes.Buffer
	for i := range lines {
		fmt.Fprintf(&want, "%05d %s\n", i, pad)
	}
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do printf '%%05d %%s\n' $i "$PAD"; i=$((i+1)); sleep %s; done`,
		lines, strconv.FormatFloat(pace.Seconds(), 'f', -1, 64))
	return startStream(t, target, id, client.StartProcessRequest{ID: id, Argv: []string{"sh", "-c", script}, Env: map[string]string{"PAD": pad}}, want.Bytes())
}

// startBurst starts `seq 1 n`, read as fast as the link allows.
func startBurst(t *testing.T, target *client.Target, id string, n int) *pacedStream {
	t.Helper()
	var want bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	return startStream(t, target, id, client.StartProcessRequest{ID: id, Argv: []string{"seq", "1", strconv.Itoa(n)}}, want.Bytes())
}

func startStream(t *testing.T, target *client.Target, id string, req client.StartProcessRequest, want []byte) *pacedStream {
	t.Helper()
	if _, err := target.StartProcess(ctx(t), req); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	s := &pacedStream{target: target, id: id, want: want, done: make(chan struct{}), sum: sha256.New()}
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	go func() {
		defer close(s.done)
		defer cancel()
		for !s.closed && c.Err() == nil {
			err := s.read(c)
			if err == nil {
				continue
			}
			s.breaks++
			if !client.IsStreamEnded(err) && wire.AsError(err).Code != wire.CodeUnavailable && !isConnError(err) {
				s.err = err // anything but the agent being away is a failure
				return
			}
			select {
			case <-c.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-s.done })
	return s
}

// read follows the events stream from the last event seen until closed or
// a break.
func (s *pacedStream) read(c context.Context) error {
	return s.target.Events(c, s.id, s.last, func(ev client.ProcessEvent) error {
		if ev.Seq <= s.last {
			return fmt.Errorf("event %d again (last %d)", ev.Seq, s.last)
		}
		s.last = ev.Seq
		switch ev.Kind {
		case client.EventOutput:
			s.sum.Write(ev.Chunk.Data)
			s.n.Add(int64(len(ev.Chunk.Data)))
			s.dropped += ev.Chunk.Dropped
		case client.EventExit:
			s.exitCode = ev.Exit.ExitCode
		case client.EventClosed:
			s.closed = true
		}
		return nil
	})
}

// isConnError is an HTTP stream cut short (the control plane ended it).
func isConnError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || strings.Contains(err.Error(), "unexpected EOF")
}

// waitBytes waits until the reader has n bytes (the stream is flowing).
func (s *pacedStream) waitBytes(t testing.TB, n int64) {
	t.Helper()
	waitFor(t, statusTimeout, fmt.Sprintf("%d bytes of output", n), func() error {
		if got := s.n.Load(); got < n {
			return fmt.Errorf("%d bytes", got)
		}
		return nil
	})
}

// check waits for the stream to close and wants every byte, in order.
func (s *pacedStream) check(t testing.TB) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the stream never closed")
	}
	want := sha256.Sum256(s.want)
	if s.err != nil {
		t.Errorf("events stream of %s: %v", s.id, s.err)
	}
	if !s.closed || s.n.Load() != int64(len(s.want)) || !bytes.Equal(s.sum.Sum(nil), want[:]) || s.dropped != 0 || s.exitCode != 0 {
		t.Errorf("output of %s: closed %v, %d bytes (dropped %d, exit %d), sha256 equal %v; want %d bytes",
			s.id, s.closed, s.n.Load(), s.dropped, s.exitCode, bytes.Equal(s.sum.Sum(nil), want[:]), len(s.want))
	}
}

// mark is the length of p's output so far; waitLog looks after it.
func (p *proc) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Len()
}

// waitLog returns when text first appears in p's output after mark.
func (p *proc) waitLog(t testing.TB, mark int, text string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		p.mu.Lock()
		found := bytes.Contains(p.out.Bytes()[mark:], []byte(text))
		p.mu.Unlock()
		if found {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not in the agent's log within %v:\n%s", text, timeout, p.output()[mark:])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
