package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// goalCall is the load rows' goal for a call's p99 (issue 20); the tail
// report counts the calls above it, which is what a p99 over it is made of.
const goalCall = 20 * time.Millisecond

var load = loadConfig{agents: 2000, rate: 1000, duration: 15 * time.Second, inflight: 1024}

// scale is the scale suite's shape (issue 20): a fleet five times the load
// suite's, driven at the same rate and at twice it.
var scale = loadConfig{agents: 10000, rate: 1000, duration: 15 * time.Second, inflight: 1024}

// The call mix, per 10 calls: capabilities (a round trip to the agent that
// does no work), fs stat, and exec of `true` (a fork on the agent).
var loadMix = []string{"caps", "caps", "caps", "caps", "caps", "stat", "stat", "stat", "stat", "exec"}

// noExecMix is the mix without exec. The agents run on the same two cores
// as the control plane, and an exec of `true` costs about as much CPU as
// the local baseline's 2.5 ms: a second drive without it shows what the
// control plane does when the agents' forks are elsewhere, as on real
// agents' own machines.
var noExecMix = []string{"caps", "caps", "caps", "caps", "caps", "stat", "stat", "stat", "stat", "stat"}

// loadSteps says what a run of the load suite does after the fleet is
// online.
type loadSteps struct {
	drive bool // drive calls (the mix, then without exec)
	rate2 int  // then the mix again at this rate, when set
	idle  bool // measure the control plane with the fleet idle
	kill  bool // after the storm, kill agentsPerProcess agents at once
}

// benchAgents is the load tool: an `outpost serve` process, N agents in
// fleet processes of their own (each enrolled with its own credentials and
// connection, serving with the real agent dispatch), and an open-loop
// driver of calls at a fixed rate through the HTTP API in this process.
// Latency counts from when a call was due, so a stall is not hidden by
// calls that were never sent.
func benchAgents(ctx context.Context, e *env) ([]row, error) {
	return loadSuite(ctx, e, load, loadSteps{drive: true})
}

// benchStorm is the load suite's reconnect storm alone: the fleet, then a
// restart of the control plane (go run ./bench -rows storm).
func benchStorm(ctx context.Context, e *env) ([]row, error) {
	return loadSuite(ctx, e, load, loadSteps{})
}

// benchScale is the load suite at scale.agents (10,000): the drives, twice
// the rate, the idle cost, the storm, and 1,000 agents killed at once.
func benchScale(ctx context.Context, e *env) ([]row, error) {
	return loadSuite(ctx, e, scale, loadSteps{drive: true, rate2: 2 * scale.rate, idle: true, kill: true})
}

// loadSuite sets up the control plane and the fleet, measures what steps
// asks, then restarts the control plane and watches the fleet come back.
func loadSuite(ctx context.Context, e *env, cfg loadConfig, steps loadSteps) ([]row, error) {
	bin, err := outpostBinary(ctx)
	if err != nil {
		return nil, err
	}
	var nats *natsProc
	if natsApart {
		nats, err = startNATSApart(ctx, bin, e.dir, filepath.Join(e.dir, "serve-state"))
		if err != nil {
			return nil, err
		}
		defer nats.stop()
	}
	sp, err := startServe(ctx, bin, e.dir, e.tls, nats)
	if err != nil {
		return nil, err
	}
	defer func() { sp.stop() }()
	cl := client.New(sp.url, benchAdminToken)
	cl.HTTP = &http.Client{Transport: sp.httpTransport(cfg.inflight)}
	ws := fmt.Sprintf("load%d", cfg.agents)
	if _, err := cl.CreateWorkspace(ctx, ws); err != nil {
		return nil, err
	}
	enrollStart := time.Now()
	idents, err := enrollMany(ctx, cl, sp.url, ws, cfg.agents)
	if err != nil {
		return nil, err
	}
	enrolled := time.Since(enrollStart)
	root := filepath.Join(e.dir, "load-root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	fl, err := startFleet(filepath.Join(e.dir, ws), idents, root)
	if err != nil {
		return nil, err
	}
	defer fl.stop()
	if err := waitOnline(ctx, cl, ws, cfg.agents, 5*time.Minute); err != nil {
		return nil, err
	}
	connect := time.Since(start)
	name := fmt.Sprintf("%d agents", cfg.agents)
	rows := []row{{Name: name + ": connect, all online", Outpost: fmt.Sprintf("%.1f s (started at %d/s in %d processes; enrolled in %.1f s)", connect.Seconds(), fleetStartRate, len(fl.procs), enrolled.Seconds()), Baseline: "—", Ratio: "—", Goal: loadNote()}}
	rows = append(rows, memoryRows(sp, cfg, "online", "")...)
	if steps.idle {
		rows = append(rows, idleRows(sp, fl, cfg)...)
	}
	if steps.drive {
		driven, err := driveRows(ctx, sp, fl, cl, ws, e.n, cfg, steps.rate2)
		if err != nil {
			return nil, err
		}
		rows = append(rows, driven...)
		// What the calls left behind in the server, per agent: the
		// driver's own connections closed first (each holds a goroutine
		// and buffers in the server; their number depends on how far
		// calls piled up, not on the agents).
		cl.HTTP.CloseIdleConnections()
		time.Sleep(2 * time.Second)
		rows = append(rows, memoryRows(sp, cfg, "online, after the drives", ".after")...)
	}
	// What went wrong in the control plane, for the runs that fail.
	defer func() { logProblems(filepath.Join(e.dir, "serve.log")) }()
	var storm []row
	restarted := time.Now()
	sp, storm, err = stormRows(ctx, sp, cl, ws, cfg.agents)
	if err != nil {
		// The rows measured so far stand; the storm's failure is a row.
		rows = append(rows, row{Name: name + ": control plane restart, reconnect storm", Outpost: "FAILED: " + ends(err.Error()), Met: "NO"})
		if !steps.kill {
			return rows, nil
		}
		// The kill needs the fleet online: how long after the restart
		// it was, if at all within 3 more minutes.
		if err := waitOnline(ctx, cl, ws, cfg.agents, 3*time.Minute); err != nil {
			return append(rows, row{Name: name + ": all online after the restart", Outpost: "FAILED: " + ends(err.Error()), Met: "NO"}), nil
		}
		rows = append(rows, row{Name: name + ": all online after the restart, at last", Outpost: secs(time.Since(restarted)), Baseline: "—", Ratio: "—", Goal: loadNote()})
	} else {
		rows = append(rows, storm...)
	}
	if steps.kill {
		killed, err := killRows(ctx, cl, ws, fl, 0)
		if err != nil {
			return append(rows, row{Name: fmt.Sprintf("%d agents killed at once", agentsPerProcess), Outpost: "FAILED: " + ends(err.Error()), Met: "NO"}), nil
		}
		rows = append(rows, killed...)
	}
	return rows, nil
}

// logClient and logNumber are what varies between the embedded server's
// log lines of one kind: the client and the figures.
var (
	logClient = regexp.MustCompile(`cid:[0-9]+ - (\\"[^\\]*\\" - ){0,2}`)
	logNumber = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
)

// logProblems prints the last warnings and errors of outpost serve's log
// at path to stderr (counted by message), for a run whose figures say that
// something failed.
func logProblems(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	count := map[string]int{}
	var order []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "level=WARN") && !strings.Contains(line, "level=ERROR") {
			continue
		}
		msg := line
		if i := strings.Index(line, " msg="); i >= 0 {
			msg = line[i:]
		}
		// One line per kind: the embedded server names each client.
		msg = logClient.ReplaceAllString(msg, "cid:N - ")
		msg = logNumber.ReplaceAllString(msg, "N")
		if len(msg) > 200 {
			msg = msg[:200]
		}
		if count[msg] == 0 {
			order = append(order, msg)
		}
		count[msg]++
	}
	if len(order) == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "bench: outpost serve's warnings and errors (%s):\n", path)
	for _, m := range order[max(0, len(order)-30):] {
		fmt.Fprintf(os.Stderr, "  %d× %s\n", count[m], m)
	}
}

// loadNote is the machine's load average now, for rows whose figures other
// work on the machine moves.
func loadNote() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return "load " + strings.Join(f[:3], " ")
}

// idleRows measures the control plane for 10 s with the whole fleet online
// and no calls: what presence alone costs.
func idleRows(sp *serveProc, fl *fleet, cfg loadConfig) []row {
	w := watchCP(sp, fl)
	time.Sleep(10 * time.Second)
	f := w.stop()
	name := fmt.Sprintf("%d agents idle", cfg.agents)
	return []row{
		{Name: name + ": presence messages/s at the control plane", Outpost: fmt.Sprintf("%.0f/s", f.presence), Baseline: "—", Ratio: "—", Goal: loadNote()},
		{Name: name + ": control plane", Outpost: f.String(), Baseline: "—", Ratio: "—"},
	}
}

// driveRows drives calls at the fleet (see drive) and reports latency,
// next to what the control plane did meanwhile.
func driveRows(ctx context.Context, sp *serveProc, fl *fleet, cl *client.Client, ws string, n int, cfg loadConfig, rate2 int) ([]row, error) {
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
	if err := warmPool(ctx, cl, driverConns); err != nil {
		return nil, err
	}
	rssIdle, _ := sp.memory()
	idle, err := measure(n, func() error { return loadCall(ctx, cl, ws, 0, loadMix[0]) })
	if err != nil {
		return nil, fmt.Errorf("idle calls: %w", err)
	}
	// What serve allocates with the fleet online and no calls, to tell
	// the calls' allocation apart from the drives' totals.
	w := watchCP(sp, fl)
	time.Sleep(idleAllocSpan)
	idleCP := w.stop()
	profiled := sp.profileCPU(cfg.duration, serveProfile)
	traced := sp.traceDrive(cfg.duration)
	allocs := sp.profileAllocs(cfg.duration)
	w = watchCP(sp, fl)
	res := drive(ctx, cl, ws, cfg, loadMix)
	cpMix := w.stop()
	cpMix.calls, cpMix.idle = res.calls, &idleCP
	tailReport(os.Stderr, fmt.Sprintf("%d agents, %d calls/s, mix", cfg.agents, cfg.rate), res, w.samples)
	note := loadNote()
	profiled()
	traced()
	allocs()
	w = watchCP(sp, fl)
	noExec := drive(ctx, cl, ws, cfg, noExecMix)
	cpQuiet := w.stop()
	cpQuiet.calls, cpQuiet.idle = noExec.calls, &idleCP
	tailReport(os.Stderr, fmt.Sprintf("%d agents, %d calls/s, without exec", cfg.agents, cfg.rate), noExec, w.samples)
	peak := max(cpMix.peakRSS, cpQuiet.peakRSS)
	p50, p99 := res.lat.pct(50), res.lat.pct(99)
	name := fmt.Sprintf("%d agents", cfg.agents)
	rows := []row{
		{Name: name + ": control plane + NATS RSS idle / peak under load", Outpost: mib(rssIdle) + " / " + mib(peak), Baseline: "—", Ratio: "—"},
		{Name: name + ": control plane + NATS RSS peak per 1,000 agents", Outpost: mib(peak * 1000 / int64(cfg.agents)), Baseline: "—", Ratio: "—",
			Goal: "≤ 60 MiB", Met: yesNo(peak*1000/int64(cfg.agents) <= 60<<20)},
		{Name: fmt.Sprintf("%s: p50 at %d calls/s (mix %s) vs one call at a time", name, cfg.rate, mix),
			Outpost: ms(p50), Baseline: ms(idle.pct(50)), Ratio: ratio(p50, idle.pct(50)), Goal: note},
		{Name: fmt.Sprintf("%s: p99 at %d calls/s", name, cfg.rate), Outpost: ms(p99), Baseline: ms(idle.pct(99)),
			Ratio: ratio(p99, idle.pct(99)), Goal: "≤ 20 ms", Met: yesNo(p99 <= goalCall)},
		{Name: fmt.Sprintf("%s: calls made / failed, achieved rate", name), Outpost: fmt.Sprintf("%d / %d, %.0f/s", res.calls, res.failed, res.achieved),
			Baseline: "—", Ratio: "—", Goal: "0 failed", Met: yesNo(res.failed == 0)},
		{Name: "  control plane meanwhile", Outpost: cpMix.String(), Baseline: "—", Ratio: "—"},
		{Name: fmt.Sprintf("  the same without exec (%s): p50 / p99, failed", quiet),
			Outpost: ms(noExec.lat.pct(50)) + " / " + ms(noExec.lat.pct(99)) + fmt.Sprintf(", %d", noExec.failed), Baseline: "—", Ratio: "—",
			Goal: "≤ 20 ms, 0 failed", Met: yesNo(noExec.lat.pct(99) <= goalCall && noExec.failed == 0)},
		{Name: "  control plane meanwhile", Outpost: cpQuiet.String(), Baseline: "—", Ratio: "—"},
	}
	if rate2 > 0 {
		c2 := cfg
		c2.rate = rate2
		w = watchCP(sp, fl)
		r2 := drive(ctx, cl, ws, c2, loadMix)
		cp2 := w.stop()
		cp2.calls, cp2.idle = r2.calls, &idleCP
		tailReport(os.Stderr, fmt.Sprintf("%d agents, %d calls/s, mix", cfg.agents, rate2), r2, w.samples)
		rows = append(rows,
			row{Name: fmt.Sprintf("%s: p50 / p99 at %d calls/s (mix %s), failed", name, rate2, mix),
				Outpost: ms(r2.lat.pct(50)) + " / " + ms(r2.lat.pct(99)) + fmt.Sprintf(", %d (%.0f/s)", r2.failed, r2.achieved), Baseline: "—", Ratio: "—", Goal: loadNote()},
			row{Name: "  control plane meanwhile", Outpost: cp2.String(), Baseline: "—", Ratio: "—"})
	}
	return rows, nil
}

// idleAllocSpan is how long the drives' rows watch serve idle first.
const idleAllocSpan = 5 * time.Second

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

// countStatus counts the agents of ws by status, as the API lists them.
func countStatus(ctx context.Context, cl *client.Client, ws string) (map[string]int, error) {
	list, err := cl.ListAgents(ctx, ws)
	out := map[string]int{}
	for _, a := range list {
		out[a.Status]++
	}
	return out, err
}

// waitOnline returns once n agents of ws are online, or fails after limit.
func waitOnline(ctx context.Context, cl *client.Client, ws string, n int, limit time.Duration) error {
	start := time.Now()
	for {
		c, err := countStatus(ctx, cl, ws)
		if err == nil && c["online"] == n {
			return nil
		}
		if time.Since(start) > limit {
			return fmt.Errorf("%d of %d agents online after %v (%v)", c["online"], n, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
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
	start         time.Time
	each          []callRecord // every call that returned, in no order
}

// callRecord is one call of a drive: when it was due (after the drive's
// start), how long it took from then, which agent and which kind.
type callRecord struct {
	due, took time.Duration
	agent     int
	op        string
}

// drive makes cfg.rate calls per second for cfg.duration, spread over the
// agents and taken in turn from mix, each due at its own time whether or not
// earlier ones returned.
func drive(ctx context.Context, cl *client.Client, ws string, cfg loadConfig, mix []string) loadResult {
	total := int(float64(cfg.rate) * cfg.duration.Seconds())
	interval := time.Second / time.Duration(cfg.rate)
	sem := make(chan struct{}, cfg.inflight)
	var mu sync.Mutex
	res := loadResult{lat: make(latencies, 0, total), each: make([]callRecord, 0, total)}
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
	res.start = start
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
			res.each = append(res.each, callRecord{due: due.Sub(start), took: took, agent: i % cfg.agents, op: mix[i%len(mix)]})
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

// stormGoal is how soon after a restart all n agents should be online
// again: 30 s for the 2,000 of the load suite, 60 s for more (issue 20).
func stormGoal(n int) time.Duration {
	if n <= 2000 {
		return 30 * time.Second
	}
	return 60 * time.Second
}

// stormPoll is how often the storm counts the agents online (per 2,000
// agents: a list of 10,000 is itself work for the control plane).
const stormPoll = 100 * time.Millisecond

// stormRows restarts the control plane (same ports, same state dir) under
// the online fleet and counts the agents online through the API until all
// are: the reconnect storm. The fleet reconnects on its own (the agents'
// jittered backoff), as laptops do. It returns the control plane now
// running.
func stormRows(ctx context.Context, sp *serveProc, cl *client.Client, ws string, n int) (*serveProc, []row, error) {
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
		case <-time.After(stormPoll * time.Duration(max(1, n/2000))):
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
			Goal: "100% ≤ " + secs(stormGoal(n)), Met: yesNo(all <= stormGoal(n))},
		{Name: "  control plane CPU from its start to all online (avg, busiest second)",
			Outpost:  fmt.Sprintf("%s CPU in %s (%.2f cores, %.2f)", secs(last.cpu), secs(last.at), float64(last.cpu)/float64(last.at), busiest),
			Baseline: "—", Ratio: "—"},
		{Name: "  online by second", Outpost: strings.Join(steps, ", "), Baseline: "—", Ratio: "—"},
	}, nil
}

// ends is the first and the last line of s (an error with a log's tail).
func ends(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) == 1 {
		return lines[0]
	}
	return lines[0] + " … " + lines[len(lines)-1]
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// killRows SIGKILLs fleet process i (agentsPerProcess agents at once, no
// goodbye) and follows every one of its agents through the API: each must
// show reconnecting once its lease lapses (within leaseGoal of the kill)
// and offline once the reconnect window has passed too, while the rest of
// the fleet stays online.
func killRows(ctx context.Context, cl *client.Client, ws string, fl *fleet, i int) ([]row, error) {
	const (
		leaseGoal = 7 * time.Second  // the lease (3 heartbeats of 2 s) and a poll
		offMin    = 30 * time.Second // the reconnect window
		offMax    = 37 * time.Second // the lease, the window and a poll
	)
	victims := map[string]bool{}
	for _, id := range fl.procs[i].ids {
		victims[id] = true
	}
	recon, off := map[string]time.Duration{}, map[string]time.Duration{}
	skipped := 0   // went offline without being seen reconnecting
	othersOff := 0 // agents of other processes seen not online
	killed := time.Now()
	fl.kill(i)
	listFailed := 0 // lists the API failed (reported, not fatal: the control plane may recover)
	var listErr error
	for len(off) < len(victims) {
		list, err := cl.ListAgents(ctx, ws)
		at := time.Since(killed)
		if err != nil {
			listFailed++
			if listErr == nil {
				listErr = err
			}
			if at > 2*time.Minute {
				return nil, fmt.Errorf("kill: list agents (%d lists failed): %w", listFailed, err)
			}
			time.Sleep(250 * time.Millisecond)
			continue
		}
		for _, a := range list {
			if !victims[a.ID] {
				if a.Status != "online" {
					othersOff++
				}
				continue
			}
			switch a.Status {
			case "reconnecting":
				if _, ok := recon[a.ID]; !ok {
					recon[a.ID] = at
				}
			case "offline":
				if _, ok := off[a.ID]; !ok {
					off[a.ID] = at
					if _, ok := recon[a.ID]; !ok {
						skipped++
					}
				}
			}
		}
		if at > 2*time.Minute {
			return nil, fmt.Errorf("kill: %d of %d agents offline 2 min after the kill", len(off), len(victims))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	spread := func(m map[string]time.Duration) (lo, mid, hi time.Duration) {
		var l latencies
		for _, d := range m {
			l = append(l, d)
		}
		return l.pct(0), l.pct(50), l.pct(100)
	}
	r0, r50, r100 := spread(recon)
	o0, o50, o100 := spread(off)
	name := fmt.Sprintf("%d agents killed at once (SIGKILL, no goodbye)", len(victims))
	return []row{
		{Name: name + ": reconnecting after min / p50 / max", Outpost: secs(r0) + " / " + secs(r50) + " / " + secs(r100) + fmt.Sprintf(" (%d seen)", len(recon)),
			Baseline: "—", Ratio: "—", Goal: "all, ≤ " + secs(leaseGoal), Met: yesNo(len(recon) == len(victims) && skipped == 0 && r100 <= leaseGoal)},
		{Name: name + ": offline after min / p50 / max", Outpost: secs(o0) + " / " + secs(o50) + " / " + secs(o100),
			Baseline: "—", Ratio: "—", Goal: secs(offMin) + "–" + secs(offMax), Met: yesNo(o0 >= offMin && o100 <= offMax)},
		{Name: "  the rest of the fleet meanwhile: seen not online", Outpost: fmt.Sprint(othersOff), Baseline: "—", Ratio: "—", Goal: "0", Met: yesNo(othersOff == 0)},
		{Name: "  lists of the agents that failed meanwhile", Outpost: fmt.Sprint(listFailed) + firstErr(listErr), Baseline: "—", Ratio: "—", Goal: "0", Met: yesNo(listFailed == 0)},
	}, nil
}

// firstErr is ", first: err" for a non-nil err.
func firstErr(err error) string {
	if err == nil {
		return ""
	}
	return ", first: " + ends(err.Error())
}
