package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
)

// loadConfig is the load tool's shape: how many agents, how many calls per
// second through the HTTP API, for how long.
type loadConfig struct {
	agents   int
	rate     int
	duration time.Duration
	inflight int // calls in flight at most; a call past it counts as failed
}

var load = loadConfig{agents: 2000, rate: 1000, duration: 15 * time.Second, inflight: 1024}

// The call mix, per 10 calls: capabilities (a round trip to the agent that
// does no work), fs stat, and exec of `true` (a fork on the agent).
var loadMix = []string{"caps", "caps", "caps", "caps", "caps", "stat", "stat", "stat", "stat", "exec"}

// noExecMix is the mix without exec. The agents run in this process on the
// same two cores as the control plane, and an exec of `true` costs about as
// much CPU as the local baseline's 2.5 ms: a second drive without it shows
// what the control plane does when the agents' forks are elsewhere, as on
// real agents' own machines.
var noExecMix = []string{"caps", "caps", "caps", "caps", "caps", "stat", "stat", "stat", "stat", "stat"}

// benchAgents is the load tool: an `outpost serve` process, N agents in this
// process (each enrolled with its own credentials and connection, serving
// with the real agent dispatch), and an open-loop driver of calls at a fixed
// rate through the HTTP API. Latency counts from when a call was due, so a
// stall is not hidden by calls that were never sent.
func benchAgents(ctx context.Context, e *env) ([]row, error) { return loadSuite(ctx, e, true) }

// benchStorm is the load suite's reconnect storm alone: the fleet, then a
// restart of the control plane (go run ./bench -rows storm).
func benchStorm(ctx context.Context, e *env) ([]row, error) { return loadSuite(ctx, e, false) }

// loadSuite sets up the control plane and the fleet, drives calls (when
// drive is set), then restarts the control plane and watches the fleet
// come back.
func loadSuite(ctx context.Context, e *env, withDrive bool) ([]row, error) {
	bin, err := outpostBinary(ctx)
	if err != nil {
		return nil, err
	}
	sp, err := startServe(ctx, bin, e.dir, e.tls)
	if err != nil {
		return nil, err
	}
	defer func() { sp.stop() }()
	cl := client.New(sp.url, benchAdminToken)
	cl.HTTP = &http.Client{Transport: sp.httpTransport(load.inflight)}
	const ws = "load"
	if _, err := cl.CreateWorkspace(ctx, ws); err != nil {
		return nil, err
	}
	idents, err := enrollMany(ctx, cl, sp.url, ws, load.agents)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(e.dir, "load-root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	fleet, connect, err := runFleet(ctx, cl, ws, idents, root)
	if fleet != nil {
		defer fleet.stop()
	}
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%d agents", load.agents)
	rows := []row{{Name: name + ": connect, all online", Outpost: fmt.Sprintf("%.1f s", connect.Seconds()), Baseline: "—", Ratio: "—"}}
	if withDrive {
		driven, err := driveRows(ctx, sp, cl, ws, e.n)
		if err != nil {
			return nil, err
		}
		rows = append(rows, driven...)
	}
	var storm []row
	sp, storm, err = stormRows(ctx, sp, cl, ws)
	if err != nil {
		return nil, err
	}
	return append(rows, storm...), nil
}

// driveRows drives calls at the fleet (see drive) and reports latency and
// memory.
func driveRows(ctx context.Context, sp *serveProc, cl *client.Client, ws string, n int) ([]row, error) {
	mix, quiet := "5 caps : 4 stat : 1 exec", "5 caps : 5 stat"
	if statRoot(ctx, cl, ws, 0) != nil {
		// A control plane without file calls: stat becomes capabilities.
		for _, m := range [][]string{loadMix, noExecMix} {
			for i, op := range m {
				if op == "stat" {
					m[i] = "caps"
				}
			}
		}
		mix, quiet = "9 caps : 1 exec, no fs", "caps only"
	}
	rssIdle, _ := sp.memory()
	idle, err := measure(n, func() error { return loadCall(ctx, cl, ws, 0, loadMix[0]) })
	if err != nil {
		return nil, fmt.Errorf("idle calls: %w", err)
	}
	profiled := sp.profileCPU(load.duration, serveProfile)
	res := drive(ctx, cl, ws, load, loadMix)
	profiled()
	_, peak := sp.memory()
	noExec := drive(ctx, cl, ws, load, noExecMix)
	p50, p99 := res.lat.pct(50), res.lat.pct(99)
	name := fmt.Sprintf("%d agents", load.agents)
	return []row{
		{Name: name + ": control plane + NATS RSS idle / peak under load", Outpost: mib(rssIdle) + " / " + mib(peak), Baseline: "—", Ratio: "—"},
		{Name: fmt.Sprintf("%s: p50 at %d calls/s (mix %s) vs one call at a time", name, load.rate, mix),
			Outpost: ms(p50), Baseline: ms(idle.pct(50)), Ratio: ratio(p50, idle.pct(50))},
		{Name: fmt.Sprintf("%s: p99 at %d calls/s", name, load.rate), Outpost: ms(p99), Baseline: ms(idle.pct(99)),
			Ratio: ratio(p99, idle.pct(99)), Goal: "≤ 20 ms", Met: yesNo(p99 <= 20*time.Millisecond)},
		{Name: fmt.Sprintf("%s: calls made / failed, achieved rate", name), Outpost: fmt.Sprintf("%d / %d, %.0f/s", res.calls, res.failed, res.achieved),
			Baseline: "—", Ratio: "—", Goal: "0 failed", Met: yesNo(res.failed == 0)},
		{Name: fmt.Sprintf("  the same without exec (%s): p50 / p99, failed", quiet),
			Outpost: ms(noExec.lat.pct(50)) + " / " + ms(noExec.lat.pct(99)) + fmt.Sprintf(", %d", noExec.failed), Baseline: "—", Ratio: "—"},
	}, nil
}

// enrollMany enrolls n agents (a0, a1, ...) the way `outpost agent enroll`
// does: a token each, a key pair each, made here, the control plane's CA
// pinned when it serves TLS (the agents then connect with wss:// through
// its port).
func enrollMany(ctx context.Context, cl *client.Client, url, ws string, n int) ([]*enroll.Config, error) {
	out := make([]*enroll.Config, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				id := fmt.Sprintf("a%d", i)
				tok, err := cl.CreateEnrollmentToken(ctx, ws, client.EnrollmentTokenRequest{Agent: id})
				if err == nil {
					out[i], err = enroll.Enroll(ctx, url, tok.Token, "", enroll.WithCAPin(tok.CASHA256))
				}
				if err != nil {
					errc <- fmt.Errorf("enroll %s: %w", id, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return out, <-errc
}

// fleet is the agents the bench runs, one goroutine each.
type fleet struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (f *fleet) stop() { f.cancel(); f.wg.Wait() }

// runFleet starts an agent per identity and returns once the control plane
// sees them all online, with how long that took.
func runFleet(ctx context.Context, cl *client.Client, ws string, idents []*enroll.Config, root string) (*fleet, time.Duration, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	fctx, cancel := context.WithCancel(context.Background())
	f := &fleet{cancel: cancel}
	start := time.Now()
	for _, id := range idents {
		a, err := agent.New(agent.Config{Identity: id, Root: root, Logger: quiet})
		if err != nil {
			return f, 0, err
		}
		f.wg.Add(1)
		go func() { defer f.wg.Done(); _ = a.Run(fctx) }()
	}
	for {
		list, err := cl.ListAgents(ctx, ws)
		online := 0
		for _, a := range list {
			if a.Status == "online" {
				online++
			}
		}
		if err == nil && online == len(idents) {
			return f, time.Since(start), nil
		}
		if time.Since(start) > 5*time.Minute {
			return f, 0, fmt.Errorf("%d of %d agents online after 5 min (%v)", online, len(idents), err)
		}
		select {
		case <-ctx.Done():
			return f, 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// loadCall makes a call of kind op on agent a<agentIdx>.
func loadCall(ctx context.Context, cl *client.Client, ws string, agentIdx int, op string) error {
	t := cl.Agent(ws, fmt.Sprintf("a%d", agentIdx))
	switch op {
	case "caps":
		_, err := t.Capabilities(ctx)
		return err
	case "stat":
		return statRoot(ctx, cl, ws, agentIdx)
	default:
		res, err := t.Exec(ctx, client.ExecRequest{Argv: []string{"true"}})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d", res.ExitCode)
		}
		return err
	}
}

// statRoot is GET {agent}/fs/stat?path=. (by hand: it needs nothing of the
// SDK but the status).
func statRoot(ctx context.Context, cl *client.Client, ws string, agentIdx int) error {
	u := fmt.Sprintf("%s/v1/workspaces/%s/agents/a%d/fs/stat?path=.", cl.BaseURL, ws, agentIdx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+cl.Token)
	resp, err := cl.HTTP.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fs stat: %s", resp.Status)
	}
	return nil
}

// loadResult is what a drive measured.
type loadResult struct {
	lat           latencies
	calls, failed int
	achieved      float64 // calls completed per second
	firstErr      error
}

// drive makes cfg.rate calls per second for cfg.duration, spread over the
// agents and taken in turn from mix, each due at its own time whether or not
// earlier ones returned.
func drive(ctx context.Context, cl *client.Client, ws string, cfg loadConfig, mix []string) loadResult {
	total := int(float64(cfg.rate) * cfg.duration.Seconds())
	interval := time.Second / time.Duration(cfg.rate)
	sem := make(chan struct{}, cfg.inflight)
	var mu sync.Mutex
	res := loadResult{lat: make(latencies, 0, total)}
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		res.failed++
		if res.firstErr == nil {
			res.firstErr = err
		}
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < total && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		select {
		case sem <- struct{}{}:
		default:
			fail(errors.New("too many calls in flight"))
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			err := loadCall(cctx, cl, ws, i%cfg.agents, mix[i%len(mix)])
			took := time.Since(due)
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			res.lat = append(res.lat, took)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.calls = total
	res.achieved = float64(len(res.lat)) / time.Since(start).Seconds()
	if res.firstErr != nil {
		fmt.Fprintf(os.Stderr, "bench: load: %d calls failed, first: %v\n", res.failed, res.firstErr)
	}
	return res
}

// stormPoll is how often the storm counts the agents online.
const stormPoll = 100 * time.Millisecond

// stormRows restarts the control plane (same ports, same state dir) under
// the online fleet and counts the agents online through the API until all
// are: the reconnect storm. The fleet reconnects on its own (the agents'
// jittered backoff), as laptops do. It returns the control plane now
// running.
func stormRows(ctx context.Context, sp *serveProc, cl *client.Client, ws string) (*serveProc, []row, error) {
	n := load.agents
	np, started, err := sp.restart(ctx)
	if err != nil {
		return sp, nil, fmt.Errorf("restart the control plane: %w", err)
	}
	healthy := time.Since(started)
	type point struct {
		at     time.Duration // since the new process started
		online int
		cpu    time.Duration // its CPU time then
	}
	var curve []point
	for {
		list, err := cl.ListAgents(ctx, ws)
		p := point{at: time.Since(started), cpu: np.cpuTime()}
		for _, a := range list {
			if a.Status == "online" {
				p.online++
			}
		}
		if err == nil {
			curve = append(curve, p)
		}
		if p.online == n {
			break
		}
		if p.at > 2*time.Minute {
			return np, nil, fmt.Errorf("storm: %d of %d agents online %v after the restart (%v)", p.online, n, p.at.Round(time.Second), err)
		}
		select {
		case <-ctx.Done():
			return np, nil, ctx.Err()
		case <-time.After(stormPoll):
		}
	}
	reach := func(frac float64) time.Duration {
		for _, p := range curve {
			if float64(p.online) >= frac*float64(n) {
				return p.at
			}
		}
		return 0
	}
	all := reach(1)
	last := curve[len(curve)-1]
	// The busiest second of the control plane's CPU, from the samples.
	var busiest float64
	for i, p := range curve {
		for j := i + 1; j < len(curve); j++ {
			if span := curve[j].at - p.at; span >= time.Second {
				busiest = max(busiest, float64(curve[j].cpu-p.cpu)/float64(span))
				break
			}
		}
	}
	if np.profiled != nil {
		<-np.profiled
	}
	// The curve: the share online at every whole second from the first
	// count (the API answers once the control plane is up).
	var steps []string
	for sec, i := int(curve[0].at/time.Second)+1, 0; ; sec++ {
		for i+1 < len(curve) && curve[i+1].at <= time.Duration(sec)*time.Second {
			i++
		}
		steps = append(steps, fmt.Sprintf("%d s %d%%", sec, curve[i].online*100/n))
		if curve[i].online == n {
			break
		}
	}
	name := fmt.Sprintf("%d agents: control plane restart (same state), reconnect storm", n)
	return np, []row{
		{Name: name + ": online 50% / 90% / 100% after its start (healthy at " + secs(healthy) + ")",
			Outpost: secs(reach(0.5)) + " / " + secs(reach(0.9)) + " / " + secs(all), Baseline: "—", Ratio: "—",
			Goal: "100% ≤ 30 s", Met: yesNo(all <= 30*time.Second)},
		{Name: "  control plane CPU from its start to all online (avg, busiest second)",
			Outpost:  fmt.Sprintf("%s CPU in %s (%.2f cores, %.2f)", secs(last.cpu), secs(last.at), float64(last.cpu)/float64(last.at), busiest),
			Baseline: "—", Ratio: "—"},
		{Name: "  online by second", Outpost: strings.Join(steps, ", "), Baseline: "—", Ratio: "—"},
	}, nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
