package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/outposthq/outpost/internal/hoptrace"
	"github.com/outposthq/outpost/internal/rawio"
)

// echoCommand runs on the remote PTY: raw mode, no terminal echo, so each
// byte typed comes back from the program, as a shell's line editor echoes.
const echoCommand = "stty raw -echo; echo ready; exec cat"

// benchEcho: keystroke echo latency over a remote terminal, `outpost exec
// -tt` (the attach WebSocket: CLI → control plane → the attach stream's
// bulk connection, NATS when the agent cannot make one → agent → PTY and
// back) next to `ssh -tt` to the loopback sshd on a direct connection (no
// ControlMaster hop). Both are client processes with piped stdin and
// stdout; one byte is typed, then its echo awaited. Both run at once and
// the keystrokes alternate between them, so that a shared machine's load,
// which comes and goes, weighs on both alike.
func benchEcho(ctx context.Context, e *env) ([]row, error) {
	bin, err := outpostBinary(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		// Built in an earlier transport's env, now removed: build again.
		bin = filepath.Join(e.dir, "outpost")
		build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/outpost")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build outpost: %v\n%s", err, out)
		}
	}
	n := max(e.n, 100)
	envv := append(os.Environ(), "OUTPOST_URL="+e.srv.URL(), "OUTPOST_TOKEN="+e.srv.AdminToken(), "OUTPOST_WORKSPACE="+e.ws)
	if e.tls {
		envv = append(envv, "OUTPOST_CA_FILE="+e.srv.CAFile())
	}
	cmd := exec.CommandContext(ctx, bin, "exec", "-tt", "--agent", e.id, "--", "sh", "-c", echoCommand)
	// The CLI reports its garbage collections on stderr (gctrace), which
	// the bench counts: a GC's stop-the-world phases and mark workers in
	// the client would be in its echo's time.
	cmd.Env = append(envv, "GODEBUG=gctrace=1")
	cliGCs := &gcLines{}
	cmd.Stderr = cliGCs
	op, err := startEcho(cmd, true)
	if err != nil {
		return nil, fmt.Errorf("outpost exec -tt: %w", err)
	}
	defer op.stop()
	names := [2]string{"keystroke echo p50, `outpost exec -tt` vs `ssh -tt`", "keystroke echo p99, `outpost exec -tt` vs `ssh -tt`"}
	cfg, sshErr := sshPeer(ctx)
	if sshErr != nil {
		lat, err := echoLatencies(n, op)
		if err != nil {
			return nil, fmt.Errorf("outpost exec -tt: %w", err)
		}
		hoptrace.Report(os.Stderr)
		return []row{
			{Name: names[0], Outpost: ms(lat[0].pct(50)), Baseline: "skipped: " + sshErr.Error(), Ratio: "—"},
			{Name: names[1], Outpost: ms(lat[0].pct(99)), Baseline: "skipped", Ratio: "—"},
		}, nil
	}
	ssh, err := startEcho(exec.CommandContext(ctx, "ssh", "-F", cfg, "-o", "ControlMaster=no", "-o", "ControlPath=none",
		"-tt", "peer", echoCommand), false)
	if err != nil {
		return nil, fmt.Errorf("ssh -tt: %w", err)
	}
	defer ssh.stop()
	sw0, sw1, swb := ctxSwitches(op.cmd.Process.Pid), ctxSwitches(ssh.cmd.Process.Pid), ctxSwitches(os.Getpid())
	stopTrace, err := startEchoTrace(e)
	if err != nil {
		return nil, err
	}
	cliGC0 := cliGCs.count()
	lat, run, err := echoLatenciesRun(n, op, ssh)
	stopTrace()
	if err != nil {
		return nil, err
	}
	if sw0 >= 0 && sw1 >= 0 {
		keys := float64(n + n/10 + 1)
		fmt.Fprintf(os.Stderr, "echo%s: context switches a keystroke, client process: outpost %.1f, ssh %.1f; this process (control plane, agent, and the bench's reads of both clients) %.1f\n", e.transport(),
			float64(ctxSwitches(op.cmd.Process.Pid)-sw0)/keys, float64(ctxSwitches(ssh.cmd.Process.Pid)-sw1)/keys, float64(ctxSwitches(os.Getpid())-swb)/keys)
	}
	hoptrace.Report(os.Stderr)
	// The client's GCs are counted as the lines arrive: wait a little for
	// the last ones.
	time.Sleep(50 * time.Millisecond)
	cliGC := cliGCs.count() - cliGC0
	withGC, slow := slowGCs(lat[0], run.gcDuring[0])
	sshWithGC, sshSlow := slowGCs(lat[1], run.gcDuring[1])
	tr := "plain"
	if e.tls {
		tr = "tls"
	}
	if err := writeEchoSamples(tr, []string{"outpost", "ssh"}, lat); err != nil {
		return nil, err
	}
	var rows []row
	var spread []string
	for i, p := range []float64{50, 99} {
		a, b := lat[0].pct(p), lat[1].pct(p)
		rows = append(rows, row{Name: names[i], Outpost: ms(a), Baseline: ms(b), Ratio: ratio(a, b), Goal: "≤ 1x", Met: yesNo(a <= b)})
		lo, hi := ratioSpread(lat[0], lat[1], p, echoResamples)
		spread = append(spread, fmt.Sprintf("p%.0f %.2f–%.2fx", p, lo, hi))
	}
	rows = append(rows, row{Name: fmt.Sprintf("  the ratios' spread: 5th–95th percentile over %d resamples of the %d rounds", echoResamples, len(lat[0])),
		Outpost: strings.Join(spread, "; "), Baseline: "—", Ratio: "—", Goal: "reported"})
	if own, other := byTurn(lat); len(own[0]) > 0 && len(other[0]) > 0 {
		// Which half a figure comes from: back to back, a keystroke right
		// after the same client's finds its path warm; the other half,
		// like every keystroke a person types, finds it idle.
		fig := func(i int) string {
			return fmt.Sprintf("p50 %.3f | %.3f; p99 %.3f | %.3f ms", msf(own[i].pct(50)), msf(other[i].pct(50)), msf(own[i].pct(99)), msf(other[i].pct(99)))
		}
		rows = append(rows, row{Name: "  by the keystroke before: the same client's | the other's",
			Outpost: fig(0), Baseline: fig(1),
			Ratio: fmt.Sprintf("p50 %s | %s; p99 %s | %s", ratio(own[0].pct(50), own[1].pct(50)), ratio(other[0].pct(50), other[1].pct(50)),
				ratio(own[0].pct(99), own[1].pct(99)), ratio(other[0].pct(99), other[1].pct(99))),
			Goal: "reported"})
	}
	rows = append(rows, row{Name: "  GCs meanwhile: `outpost` CLI; this process (control plane, agent), its allocations a keystroke",
		Outpost: fmt.Sprintf("%d; %d, %.1f (%.0f B); slowest 1%%: %d of %d (ssh's %d of %d) during a GC", cliGC, run.gcs,
			float64(run.allocs)/float64(len(lat[0])), float64(run.allocBytes)/float64(len(lat[0])), withGC, slow, sshWithGC, sshSlow),
		Baseline: "—", Ratio: "—", Goal: "reported"})
	return rows, nil
}

// echoClient is a started client process whose echo is timed.
type echoClient struct {
	what  string // for errors
	cmd   *exec.Cmd
	stdin *os.File  // the write end of the client's stdin
	w     io.Writer // stdin's, by direct system calls (rawio)
	r     *bufio.Reader
	i     int
	trace bool    // mark the hops Typed and Echoed (a hoptrace build)
	buf   [1]byte // the keystroke written
}

// startEcho starts cmd and waits for its "ready".
//
// The bench's ends of the client's pipes are read and written with direct
// system calls (rawio), as a C harness would: no Go runtime wake-up of the
// bench's own (its monitor thread, woken by the first system call after
// an idle spell) in either client's figure.
func startEcho(cmd *exec.Cmd, trace bool) (*echoClient, error) {
	setParentDeath(cmd) // an interrupted bench leaves no client behind
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = childIn
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		childIn.Close()
		stdin.Close()
		return nil, err
	}
	if cmd.Stderr == nil {
		cmd.Stderr = io.Discard
	}
	err = cmd.Start()
	childIn.Close()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	var out io.Reader = stdout
	if f, ok := stdout.(*os.File); ok {
		out = rawio.File(f)
	}
	c := &echoClient{what: filepath.Base(cmd.Path), cmd: cmd, stdin: stdin, w: rawio.File(stdin), r: bufio.NewReader(out), trace: trace}
	ready := make(chan error, 1)
	go func() {
		for {
			line, err := c.r.ReadString('\n')
			if err != nil {
				ready <- fmt.Errorf("before ready: %w", err)
				return
			}
			if strings.Contains(line, "ready") {
				ready <- nil
				return
			}
		}
	}()
	select {
	case err = <-ready:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("no ready line in 30 s")
	}
	if err != nil {
		c.stop() // ends the reading goroutine too (its pipe closes)
		return nil, err
	}
	return c, nil
}

// stop ends the client.
func (c *echoClient) stop() { _ = c.cmd.Process.Kill(); _ = c.cmd.Wait(); c.stdin.Close() }

// key types one byte and waits for its echo.
func (c *echoClient) key() error {
	b := byte('a' + c.i%26)
	c.i++
	if c.trace {
		hoptrace.Mark(hoptrace.Typed)
	}
	c.buf[0] = b
	if _, err := c.w.Write(c.buf[:]); err != nil {
		return fmt.Errorf("%s: %w", c.what, err)
	}
	for {
		ch, err := c.r.ReadByte()
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		if ch == b {
			if c.trace {
				hoptrace.Mark(hoptrace.Echoed)
			}
			return nil
		}
	}
}

// echoGap (-echo-gap) is the pause before each timed keystroke: none by
// default (the figures so far were taken back to back).
var echoGap time.Duration

// echoLatencies times n keystrokes of each client, after a warm-up of
// each, the clients taking turns: one keystroke and its echo of each, the
// first of each round in turn, each after a pause of echoGap. Typed by a
// person, keystrokes come tens of milliseconds apart, each to an idle
// path (-echo-gap 2ms and more: every process on the path wakes from
// idle); back to back, what one client's side still did after its echo
// (the agent's acknowledgement, a socket's last read, a runtime thread
// woken) may run into the timing of the other's next keystroke, ssh's
// too, timed in this same process, which hosts the control plane and the
// agent.
func echoLatencies(n int, cs ...*echoClient) ([]latencies, error) {
	lat, _, err := echoLatenciesRun(n, cs...)
	return lat, err
}

// echoRun is what this process's Go runtime did during the timed
// keystrokes of echoLatenciesRun (the control plane, the agent and the
// bench's own reads and writes of the clients' pipes).
type echoRun struct {
	gcs, allocs, allocBytes uint64 // GC cycles, heap allocations (objects, bytes)
	// gcDuring[i][k]: a GC cycle of this process ended during
	// client i's keystroke k (read after each keystroke, outside its time).
	gcDuring [][]bool
}

// gcMetrics are the runtime/metrics samples echoLatenciesRun reads.
func gcMetrics() []metrics.Sample {
	return []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
}

// echoLatenciesRun is echoLatencies with what the runtime did meanwhile.
func echoLatenciesRun(n int, cs ...*echoClient) ([]latencies, echoRun, error) {
	var run echoRun
	for range n/10 + 1 {
		for _, c := range cs {
			if err := c.key(); err != nil {
				return nil, run, err
			}
		}
	}
	out := make([]latencies, len(cs))
	run.gcDuring = make([][]bool, len(cs))
	for i := range out {
		out[i] = make(latencies, 0, n)
		run.gcDuring[i] = make([]bool, 0, n)
	}
	if err := writeAllocProfile(".before"); err != nil {
		return nil, run, err
	}
	before, after := gcMetrics(), gcMetrics()
	gcNow := gcMetrics()[:1] // its own: before's are the run's start
	metrics.Read(before)
	lastGC := before[0].Value.Uint64()
	for r := range n {
		for j := range cs {
			i := (r + j) % len(cs)
			time.Sleep(echoGap)
			tracing := trace.IsEnabled()
			if tracing {
				// Each keystroke's start and end in the execution trace
				// (go tool trace -d=parsed: Log events), to find the slowest
				// keystrokes' events.
				trace.Log(context.Background(), "echo-key", cs[i].what+" "+strconv.Itoa(r))
			}
			start := time.Now()
			if err := cs[i].key(); err != nil {
				return nil, run, err
			}
			d := time.Since(start)
			out[i] = append(out[i], d)
			if tracing {
				trace.Log(context.Background(), "echo-done", cs[i].what+" "+strconv.Itoa(r)+" "+strconv.FormatInt(d.Microseconds(), 10))
			}
			metrics.Read(gcNow)
			g := gcNow[0].Value.Uint64()
			run.gcDuring[i] = append(run.gcDuring[i], g != lastGC)
			lastGC = g
		}
	}
	metrics.Read(after)
	if err := writeAllocProfile(""); err != nil {
		return nil, run, err
	}
	run.gcs = after[0].Value.Uint64() - before[0].Value.Uint64()
	run.allocs = after[1].Value.Uint64() - before[1].Value.Uint64()
	run.allocBytes = after[2].Value.Uint64() - before[2].Value.Uint64()
	return out, run, nil
}

// slowGCs is how many of lat's keystrokes at or over its p99 had a GC
// cycle of this process during them (gc, from echoRun.gcDuring), and how
// many keystrokes that is.
func slowGCs(lat latencies, gc []bool) (withGC, slow int) {
	p99 := lat.pct(99)
	for k, d := range lat {
		if d >= p99 {
			slow++
			if k < len(gc) && gc[k] {
				withGC++
			}
		}
	}
	return withGC, slow
}

// gcLines counts the gctrace lines ("gc N @…") a client process writes
// to its stderr: its garbage collections.
type gcLines struct {
	mu      sync.Mutex
	n       int
	partial bool // the last write ended inside a line
}

func (g *gcLines) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, line := range bytes.SplitAfter(p, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if !g.partial && bytes.HasPrefix(line, []byte("gc ")) {
			g.n++
		}
		g.partial = line[len(line)-1] != '\n'
	}
	return len(p), nil
}

// count is the GCs counted so far.
func (g *gcLines) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// echoLatency starts cmd, waits for "ready", then types n bytes one at a
// time and times each one's echo.
func echoLatency(cmd *exec.Cmd, n int) (latencies, error) {
	c, err := startEcho(cmd, false)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	lat, err := echoLatencies(n, c)
	if err != nil {
		return nil, err
	}
	return lat[0], nil
}

// ctxSwitches is the context switches of process pid's threads so far
// (voluntary and not; Linux's /proc), -1 where that is not known: a
// client's wake-ups, ssh's one thread against the CLI's Go runtime.
func ctxSwitches(pid int) int64 {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		return -1
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				sum += n
			}
		}
	}
	return sum
}

// echoMemProfile (-echo-memprofile FILE): allocation profiles of this
// process around the echo's timed keystrokes (FILE.before, FILE), every
// allocation recorded.
var echoMemProfile string

// echoMemProfiles counts the profiles written: the TLS rows' are
// FILE.1.before and FILE.1, and so on.
var echoMemProfiles int

// writeAllocProfile writes this process's allocation profile to
// echoMemProfile's file (with suffix), when -echo-memprofile is given.
func writeAllocProfile(suffix string) error {
	if echoMemProfile == "" {
		return nil
	}
	name := echoMemProfile
	if echoMemProfiles > 0 {
		name += "." + strconv.Itoa(echoMemProfiles)
	}
	if suffix == "" {
		echoMemProfiles++
	}
	f, err := os.Create(name + suffix)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.GC() // the profile is as of the last GC
	return pprof.Lookup("allocs").WriteTo(f, 0)
}

// echoTrace (-echo-trace FILE) writes this process's execution trace (the
// control plane's and the agent's goroutines) of the timed keystrokes to
// FILE (FILE.tls for the TLS rows).
var echoTrace string

func startEchoTrace(e *env) (stop func(), err error) {
	if echoTrace == "" {
		return func() {}, nil
	}
	name := echoTrace
	if e.tls {
		name += ".tls"
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { trace.Stop(); f.Close() }, nil
}
