package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// hangBound is how long a call to a frozen agent may take before it counts
// as hanging: the server's pings close its connection within 15 s of the
// last thing it heard from the agent (5 s apart, one unanswered), which
// ends its presence and the call; plus slack for a loaded CI machine, well
// under exec's 60 s timeout and the 30 s reconnect window.
const hangBound = 20 * time.Second

// sessionEnv is a control plane with a laptop agent (no pool) and a pool
// agent (pool "cloud"), each serving its own directory, and a session with
// backends "laptop" and "cloud", active on laptop.
type sessionEnv struct {
	cp      *controlPlane
	ws      string
	agents  map[string]*agentProc // by agent id
	backend map[string]string     // backend name → agent id
	sess    *client.Target
	id      string
}

func newSessionEnv(t *testing.T) *sessionEnv {
	t.Helper()
	cp := startControlPlane(t)
	e := &sessionEnv{cp: cp, ws: cp.workspace("w1"), id: "s1",
		agents:  map[string]*agentProc{},
		backend: map[string]string{"laptop": "laptop1", "cloud": "cloud1"},
	}
	e.agents["laptop1"] = startAgent(t, cp.enroll(e.ws, "laptop1", ""), t.TempDir())
	e.agents["cloud1"] = startAgent(t, cp.enroll(e.ws, "cloud1", "cloud"), t.TempDir())
	for id := range e.agents {
		cp.waitStatus(e.ws, id, "online")
	}
	_, err := cp.cl.CreateSession(ctx(t), e.ws, client.CreateSessionRequest{ID: e.id, Active: "laptop",
		Backends: map[string]client.SessionBackend{
			"laptop": {Kind: client.KindAgent, Agent: "laptop1"},
			"cloud":  {Kind: client.KindPool, Pool: "cloud"},
		}})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	e.sess = cp.cl.Session(e.ws, e.id)
	return e
}

func (e *sessionEnv) show(t *testing.T) *client.Session {
	t.Helper()
	s, err := e.cp.cl.GetSession(ctx(t), e.ws, e.id)
	if err != nil {
		t.Fatalf("get session: %v", err)
	}
	return s
}

// swapLoad counts what the clients of TestSwapUnderLoad saw.
type swapLoad struct {
	ops atomic.Int64
	// committed is the epoch of the last swap that returned: a call sent
	// after it must run at that epoch or later.
	committed atomic.Uint64
	mu        sync.Mutex
	attempts  []string // every write id sent
	unknown   int      // writes answered conflict/outcome_unknown
	failures  []string // reads or writes that failed, and misrouted reads
	reads     map[string]int
}

func (l *swapLoad) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = append(l.failures, fmt.Sprintf(format, args...))
}

// TestSwapUnderLoad swaps laptop → cloud → laptop (three times) while four
// clients loop over a read (capabilities) and a write (exec appending a
// unique line to writes.log). Reads never fail and are answered by the
// backend the Outpost-Backend header names; a call sent after a swap
// returned runs at that swap's epoch or later; a write that raced a swap may
// answer conflict/outcome_unknown, and the client then asks the backend
// that ran it whether it landed, as a user would, and sends it again only
// if not. In the end every write is in exactly one of the two directories,
// exactly once.
func TestSwapUnderLoad(t *testing.T) {
	e := newSessionEnv(t)
	load := &swapLoad{reads: map[string]int{}}
	load.committed.Store(1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				e.write(t, load, fmt.Sprintf("c%d-%d", c, i))
				e.read(t, load)
				load.ops.Add(1)
			}
		}()
	}
	var swapErr error
	for i, to := range []string{"cloud", "laptop", "cloud", "laptop", "cloud", "laptop"} {
		waitOps(t, load, 12)
		s, err := e.cp.cl.SwapSession(ctx(t), e.ws, e.id, to, uint64(i+1))
		if err != nil {
			swapErr = fmt.Errorf("swap %d to %s: %w", i+1, to, err)
			break
		}
		load.committed.Store(s.Epoch)
	}
	if swapErr == nil {
		waitOps(t, load, 12)
	}
	close(stop)
	wg.Wait()
	if swapErr != nil {
		t.Fatal(swapErr)
	}

	if len(load.failures) > 0 {
		t.Fatalf("%d failed or misrouted calls during swaps, want 0:\n%s", len(load.failures), strings.Join(load.failures, "\n"))
	}
	s := e.show(t)
	if s.Active != "laptop" || s.Epoch != 7 || len(s.Transitions) != 6 {
		t.Fatalf("session after six swaps: active %s epoch %d, %d transitions; want laptop, 7, 6", s.Active, s.Epoch, len(s.Transitions))
	}
	counts := map[string]int{}
	perRoot := map[string]int{}
	for id, a := range e.agents {
		for _, line := range readLines(t, filepath.Join(a.root, "writes.log")) {
			counts[line]++
			perRoot[id]++
		}
	}
	for _, id := range load.attempts {
		if counts[id] != 1 {
			t.Errorf("write %s applied %d times, want exactly once", id, counts[id])
		}
		delete(counts, id)
	}
	if len(counts) > 0 {
		t.Errorf("lines nobody wrote: %v", counts)
	}
	if perRoot["laptop1"] == 0 || perRoot["cloud1"] == 0 || load.reads["laptop1"] == 0 || load.reads["cloud1"] == 0 {
		t.Errorf("writes per agent %v, reads per agent %v; want both backends used", perRoot, load.reads)
	}
	t.Logf("%d writes (%d answered outcome_unknown, resolved by asking the backend), reads %v, writes per agent %v",
		len(load.attempts), load.unknown, load.reads, perRoot)
}

// write appends id to writes.log through the session. An outcome_unknown
// answer is resolved by asking the agent behind the backend that ran it.
func (e *sessionEnv) write(t *testing.T, load *swapLoad, id string) {
	load.mu.Lock()
	load.attempts = append(load.attempts, id)
	load.mu.Unlock()
	req := client.ExecRequest{Argv: []string{"sh", "-c", `printf '%s\n' "$1" >> writes.log`, "sh", id}}
	for try := 1; try <= 3; try++ {
		var route client.Route
		atLeast := load.committed.Load()
		res, err := e.sess.Exec(client.WithRoute(ctx(t), &route), req)
		if route.Epoch < atLeast {
			load.fail("write %s sent after epoch %d was committed ran at epoch %d", id, atLeast, route.Epoch)
		}
		var we *wire.Error
		switch {
		case err == nil && res.ExitCode == 0:
			return
		case err == nil:
			load.fail("write %s: exit %d: %s", id, res.ExitCode, res.Stderr)
			return
		case !errors.As(err, &we) || we.Code != wire.CodeConflict || we.Reason != wire.ReasonOutcomeUnknown:
			load.fail("write %s: %v", id, err)
			return
		}
		load.mu.Lock()
		load.unknown++
		load.mu.Unlock()
		landed, err := e.landed(t, route.Backend, id)
		if err != nil {
			load.fail("write %s: resolve outcome_unknown on %q: %v", id, route.Backend, err)
			return
		}
		if landed {
			return
		}
	}
	load.fail("write %s: outcome unknown three times", id)
}

// landed asks the agent behind backend whether id is in its writes.log.
func (e *sessionEnv) landed(t *testing.T, backend, id string) (bool, error) {
	ag, ok := e.backend[backend]
	if !ok {
		return false, fmt.Errorf("no such backend in Outpost-Backend")
	}
	res, err := e.cp.cl.Agent(e.ws, ag).Exec(ctx(t), client.ExecRequest{Argv: []string{"grep", "-qxF", "--", id, "writes.log"}})
	if err != nil {
		return false, err
	}
	return res.ExitCode == 0, nil
}

// read asks the session which machine it is on; the answer must come from
// the agent of the backend the response header names.
func (e *sessionEnv) read(t *testing.T, load *swapLoad) {
	var route client.Route
	atLeast := load.committed.Load()
	caps, err := e.sess.Capabilities(client.WithRoute(ctx(t), &route))
	if err != nil {
		load.fail("read: %v", err)
		return
	}
	if route.Epoch < atLeast {
		load.fail("read sent after epoch %d was committed ran at epoch %d", atLeast, route.Epoch)
	}
	if want := e.backend[route.Backend]; caps.Agent != want {
		load.fail("read answered by %s with Outpost-Backend %q (agent %s)", caps.Agent, route.Backend, want)
		return
	}
	load.mu.Lock()
	load.reads[caps.Agent]++
	load.mu.Unlock()
}

// waitOps waits until the clients completed n more loops.
func waitOps(t *testing.T, load *swapLoad, n int64) {
	t.Helper()
	target := load.ops.Load() + n
	waitFor(t, statusTimeout, fmt.Sprintf("%d client loops", n), func() error {
		if got := load.ops.Load(); got < target {
			return fmt.Errorf("at %d of %d", got, target)
		}
		return nil
	})
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// TestFrozenAgentIs503 freezes the laptop agent with SIGSTOP: calls through
// the session answer 503 within its lease, never hang and never 404, and do
// not run when it wakes; a swap to the frozen laptop is refused and the
// pointer stays; after SIGCONT it serves again.
func TestFrozenAgentIs503(t *testing.T) {
	e := newSessionEnv(t)
	laptop := e.agents["laptop1"]
	laptop.signal(syscall.SIGSTOP)
	t.Cleanup(func() { laptop.signal(syscall.SIGCONT) })
	waitFor(t, statusTimeout, "the laptop agent stopped", func() error { return processState(laptop.cmd.Process.Pid, "T") })

	// Each exec writes a file: answered 503, it must not run when the agent
	// wakes up with it still in its socket.
	for i, what := range []string{"exec while the lease runs out", "exec when reconnecting"} {
		start := time.Now()
		var route client.Route
		_, err := e.sess.Exec(client.WithRoute(ctx(t), &route), client.ExecRequest{Argv: []string{"touch", fmt.Sprintf("frozen-%d", i)}})
		took := time.Since(start)
		wantUnavailable(t, what, err, wire.ReasonAgentReconnecting, wire.ReasonAgentOffline)
		if took > hangBound || route.Backend != "laptop" || route.Epoch != 1 {
			t.Fatalf("%s: answered after %v by backend %q epoch %d; want within %v, laptop at epoch 1", what, took, route.Backend, route.Epoch, hangBound)
		}
	}
	a, err := e.cp.cl.GetAgent(ctx(t), e.ws, "laptop1")
	if err != nil || a.Status != "reconnecting" {
		t.Fatalf("frozen agent: status %v, err %v; want reconnecting (200, never 404)", a, err)
	}

	// The user escapes to the cloud; swapping back to the frozen laptop is
	// refused and leaves the pointer on cloud.
	if _, err := e.cp.cl.SwapSession(ctx(t), e.ws, e.id, "cloud", 1); err != nil {
		t.Fatalf("swap to cloud while the laptop is frozen: %v", err)
	}
	if caps, err := e.sess.Capabilities(ctx(t)); err != nil || caps.Agent != "cloud1" {
		t.Fatalf("read on cloud: %+v, %v", caps, err)
	}
	_, err = e.cp.cl.SwapSession(ctx(t), e.ws, e.id, "laptop", 0)
	wantUnavailable(t, "swap to the frozen laptop", err, wire.ReasonAgentReconnecting, wire.ReasonAgentOffline, "not_responding")
	if s := e.show(t); s.Active != "cloud" || s.Epoch != 2 {
		t.Fatalf("after a refused swap: active %s epoch %d, want cloud 2", s.Active, s.Epoch)
	}

	laptop.signal(syscall.SIGCONT)
	e.cp.waitStatus(e.ws, "laptop1", "online")
	if _, err := e.cp.cl.Agent(e.ws, "laptop1").Exec(ctx(t), client.ExecRequest{Argv: []string{"true"}}); err != nil {
		t.Fatalf("exec on the thawed laptop: %v", err)
	}
	for i := range 2 {
		if _, err := os.Stat(filepath.Join(laptop.root, fmt.Sprintf("frozen-%d", i))); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("exec %d, answered 503 while the agent was frozen, ran when it woke (stat: %v)", i, err)
		}
	}
	if _, err := e.cp.cl.SwapSession(ctx(t), e.ws, e.id, "laptop", 2); err != nil {
		t.Fatalf("swap to the thawed laptop: %v", err)
	}
	res, err := e.sess.Exec(ctx(t), client.ExecRequest{Argv: []string{"pwd"}})
	if err != nil || strings.TrimSpace(res.Stdout) != laptop.root {
		t.Fatalf("exec after SIGCONT: %+v, %v; want pwd %s", res, err, laptop.root)
	}
}

// wantUnavailable checks err is 503 with one of reasons.
func wantUnavailable(t *testing.T, what string, err error, reasons ...string) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeUnavailable {
		t.Fatalf("%s: %v, want 503 unavailable", what, err)
	}
	for _, r := range reasons {
		if we.Reason == r {
			return
		}
	}
	t.Fatalf("%s: reason %q, want one of %v", what, we.Reason, reasons)
}

// TestSwapToOfflineIsRefused: a swap to an agent that stopped, or to a pool
// whose only agent stopped, is 503 and the pointer, epoch and transitions
// do not move; nothing is claimed.
func TestSwapToOfflineIsRefused(t *testing.T) {
	e := newSessionEnv(t)
	if _, err := e.cp.cl.SwapSession(ctx(t), e.ws, e.id, "cloud", 1); err != nil {
		t.Fatalf("swap to cloud: %v", err)
	}
	e.agents["laptop1"].stop()
	_, err := e.cp.cl.SwapSession(ctx(t), e.ws, e.id, "laptop", 0)
	wantUnavailable(t, "swap to the stopped laptop", err, wire.ReasonAgentOffline)
	if s := e.show(t); s.Active != "cloud" || s.Epoch != 2 || len(s.Transitions) != 1 {
		t.Fatalf("after a refused swap: active %s epoch %d, %d transitions; want cloud 2 1", s.Active, s.Epoch, len(s.Transitions))
	}

	// A second session on the laptop cannot move to a pool with no agent.
	if _, err := e.cp.cl.CreateSession(ctx(t), e.ws, client.CreateSessionRequest{ID: "s2", Active: "laptop",
		Backends: map[string]client.SessionBackend{
			"laptop": {Kind: client.KindAgent, Agent: "laptop1"},
			"gpu":    {Kind: client.KindPool, Pool: "gpu"},
		}}); err != nil {
		t.Fatalf("create a session on the offline laptop: %v (an asleep laptop is still a backend)", err)
	}
	_, err = e.cp.cl.SwapSession(ctx(t), e.ws, "s2", "gpu", 0)
	wantUnavailable(t, "swap to an empty pool", err, "pool_exhausted")
	s2, err := e.cp.cl.GetSession(ctx(t), e.ws, "s2")
	if err != nil || s2.Active != "laptop" || s2.Epoch != 1 || s2.Backends["gpu"].Claimed != "" {
		t.Fatalf("s2 after a refused swap: %+v, %v; want laptop at epoch 1, nothing claimed", s2, err)
	}
	_, err = e.cp.cl.Session(e.ws, "s2").Exec(ctx(t), client.ExecRequest{Argv: []string{"true"}})
	wantUnavailable(t, "exec on the stopped laptop", err, wire.ReasonAgentOffline)
}

// TestSecondDaemonCannotServe: a second `agent run` with the same identity,
// on this machine (same config, its lock) or another (a copy of the
// config), exits with an error while the first keeps serving; --takeover
// replaces the first.
func TestSecondDaemonCannotServe(t *testing.T) {
	cp := startControlPlane(t)
	ws := cp.workspace("w1")
	cfg := cp.enroll(ws, "a1", "")
	first := startAgent(t, cfg, t.TempDir())
	cp.waitStatus(ws, "a1", "online")
	copied := filepath.Join(t.TempDir(), "elsewhere.json")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copied, b, 0o600); err != nil {
		t.Fatal(err)
	}
	target := cp.cl.Agent(ws, "a1")
	for _, config := range []string{cfg, copied} {
		second := startAgent(t, config, t.TempDir())
		select {
		case <-second.done:
		case <-time.After(startTimeout):
			t.Fatalf("second daemon with %s still runs beside the first:\n%s", config, second.output())
		}
		if code := second.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(second.output(), "already serves this identity") {
			t.Fatalf("second daemon with %s: exit %d, output:\n%s\nwant exit 1 saying another daemon serves the identity", config, code, second.output())
		}
		if res, err := target.Exec(ctx(t), client.ExecRequest{Argv: []string{"pwd"}}); err != nil || strings.TrimSpace(res.Stdout) != first.root {
			t.Fatalf("after a refused second daemon: %+v, %v; want the first (%s) serving", res, err, first.root)
		}
	}

	takerRoot := t.TempDir()
	taker := startProc(t, nil, "agent", "run", "--config", copied, "--root", takerRoot, "--takeover")
	select {
	case <-first.done:
	case <-time.After(startTimeout):
		t.Fatalf("first daemon still runs after --takeover:\n%s\ntaker:\n%s", first.output(), taker.output())
	}
	waitFor(t, statusTimeout, "the taker serving", func() error {
		res, err := target.Exec(ctx(t), client.ExecRequest{Argv: []string{"pwd"}})
		if err != nil {
			return err
		}
		if got := strings.TrimSpace(res.Stdout); got != takerRoot {
			return fmt.Errorf("pwd %s, want %s", got, takerRoot)
		}
		return nil
	})
}

// processState checks that ps reports pid in state want (e.g. "T", stopped).
func processState(pid int, want string) error {
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return fmt.Errorf("ps: %w", err)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, want) {
		return fmt.Errorf("state %q, want %s", got, want)
	}
	return nil
}
