package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/natstest"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

var laptop = subjects.Agent{Workspace: "w1", ID: "laptop"}

// world is a JWT-authenticated NATS server, the control plane's side of it
// (service connection, presence, rpc client) and one agent identity.
type world struct {
	auth  *natstest.Auth
	nc    *nats.Conn
	pr    *presence.Tracker
	calls *rpc.Client
	ident *enroll.Config
	root  string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{auth: natstest.StartAuth(t), root: t.TempDir()}
	w.nc = w.auth.Service(t, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	w.pr = presence.New(presence.Config{Sweep: 10 * time.Millisecond})
	if err := w.pr.Start(w.nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.pr.Close)
	w.calls, _ = rpc.New(rpc.Config{Conn: w.nc, Presence: w.pr})
	w.ident = w.auth.Identity(t, laptop)
	return w
}

// running is an agent's Run in the background.
type running struct {
	a      *agent.Agent
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

func (w *world) start(t *testing.T, cfg agent.Config) *running {
	t.Helper()
	if cfg.Identity == nil {
		cfg.Identity = w.ident
	}
	if cfg.Root == "" {
		cfg.Root = w.root
	}
	cfg.HeartbeatInterval = 100 * time.Millisecond
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w.run(t, a)
}

// run runs a in the background until the test ends.
func (w *world) run(t *testing.T, a *agent.Agent) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	t.Cleanup(func() { r.stop() })
	return r
}

// stop cancels Run and returns its error.
func (r *running) stop() error {
	r.once.Do(func() {
		r.cancel()
		select {
		case r.err = <-r.done:
		case <-time.After(20 * time.Second):
			r.err = errors.New("Run did not return")
		}
	})
	return r.err
}

// wait returns Run's error without canceling it.
func (r *running) wait() error {
	r.once.Do(func() {
		select {
		case r.err = <-r.done:
		case <-time.After(20 * time.Second):
			r.err = errors.New("Run did not return")
		}
	})
	return r.err
}

func tctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func (w *world) waitOnline(t *testing.T, inst string) {
	t.Helper()
	ctx := tctx(t)
	for {
		e := w.pr.Get(laptop)
		if e.Status == presence.Online && (inst == "" || e.Instance == inst) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("agent not online (instance %q): %+v", inst, e)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (w *world) exec(t *testing.T, req *wire.ExecRequest, opts rpc.CallOptions) (*wire.ExecResult, error) {
	t.Helper()
	var res wire.ExecResult
	err := w.calls.Call(tctx(t), laptop, wire.OpExec, req, &res, opts)
	return &res, err
}

func TestServesOps(t *testing.T) {
	w := newWorld(t)
	r := w.start(t, agent.Config{Version: "1.2.3"})
	w.waitOnline(t, r.a.Instance())

	var hello wire.Hello
	if err := w.calls.Call(tctx(t), laptop, wire.OpCapabilities, nil, &hello, rpc.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if hello.Version != "1.2.3" || hello.Agent != "laptop" || !hello.Capabilities["exec"] || hello.Root != w.root {
		t.Fatalf("capabilities %+v", hello)
	}
	if e := w.pr.Get(laptop); e.Hello == nil || e.Hello.Instance != r.a.Instance() {
		t.Fatalf("presence did not record the hello: %+v", e)
	}
	var ping wire.PingResult
	if err := w.calls.Call(tctx(t), laptop, wire.OpPing, nil, &ping, rpc.CallOptions{}); err != nil || ping.Instance != r.a.Instance() {
		t.Fatalf("ping %+v %v", ping, err)
	}
	res, err := w.exec(t, &wire.ExecRequest{Command: "echo $X; pwd", Env: map[string]string{"X": "hi"}}, rpc.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.EvalSymlinks(w.root)
	if got := string(res.Stdout); got != "hi\n"+root+"\n" {
		t.Fatalf("exec stdout %q", got)
	}
	err = w.calls.Call(tctx(t), laptop, "no.such.op", nil, nil, rpc.CallOptions{})
	if we := wire.AsError(err); we.Code != wire.CodeUnsupported || we.Reason != wire.ReasonUnknownOp {
		t.Fatalf("unknown op: %v", err)
	}
}

// raw sends a hand-made envelope, for what the rpc client never sends.
func (w *world) raw(t *testing.T, req *wire.Request) error {
	t.Helper()
	data, _ := req.Marshal()
	msg, err := natstest.Request(w.nc, laptop, data, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := wire.DecodeResponse(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ID != req.ID {
		t.Fatalf("reply id %q, want %q", resp.ID, req.ID)
	}
	return resp.Into(nil)
}

func TestRefusesStaleAndFencedRequests(t *testing.T) {
	w := newWorld(t)
	r := w.start(t, agent.Config{})
	w.waitOnline(t, r.a.Instance())
	marker := filepath.Join(w.root, "ran")
	touch := &wire.ExecRequest{Argv: []string{"touch", "ran"}}

	past, _ := wire.NewRequest(wire.OpExec, touch, time.Now().Add(-time.Second))
	if we := wire.AsError(w.raw(t, past)); we.Code != wire.CodeDeadlineExceeded || we.Reason != wire.ReasonDeadlinePassed {
		t.Fatalf("expired request: %v", we)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("an expired request ran")
	}
	// Late: within its deadline, but past its start-by time (it waited in a
	// frozen agent while its caller was told 503).
	late, _ := wire.NewRequest(wire.OpExec, touch, time.Now().Add(time.Minute))
	late.StartBy = time.Now().Add(-time.Second).UnixMilli()
	if we := wire.AsError(w.raw(t, late)); we.Code != wire.CodeDeadlineExceeded || we.Reason != wire.ReasonDeadlinePassed {
		t.Fatalf("late request: %v", we)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("a late request ran")
	}
	bad := &wire.Request{Version: wire.Version + 1, ID: "x1", Op: wire.OpPing, Deadline: time.Now().Add(time.Minute).UnixMilli()}
	if we := wire.AsError(w.raw(t, bad)); we.Reason != wire.ReasonVersion {
		t.Fatalf("wrong protocol version: %v", we)
	}

	if _, err := w.exec(t, touch, rpc.CallOptions{Session: "s1", Epoch: 5}); err != nil {
		t.Fatal(err)
	}
	os.Remove(marker)
	_, err := w.exec(t, touch, rpc.CallOptions{Session: "s1", Epoch: 4})
	if we := wire.AsError(err); we.Code != wire.CodeConflict || we.Reason != wire.ReasonFenced {
		t.Fatalf("stale epoch: %v, want conflict/fenced", err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("a fenced request ran")
	}
	for _, opts := range []rpc.CallOptions{{Session: "s1", Epoch: 5}, {Session: "s1", Epoch: 6}, {Session: "s2", Epoch: 1}, {}} {
		if _, err := w.exec(t, touch, opts); err != nil {
			t.Fatalf("%+v: %v", opts, err)
		}
	}
}

func TestIdempotentMutationRunsOnce(t *testing.T) {
	w := newWorld(t)
	r := w.start(t, agent.Config{})
	w.waitOnline(t, r.a.Instance())
	req := &wire.ExecRequest{Command: "echo x >> log; wc -l < log"}
	var wg sync.WaitGroup
	outs := make([]string, 4)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := w.exec(t, req, rpc.CallOptions{IdempotencyKey: "k1"})
			if err != nil {
				t.Error(err)
				return
			}
			outs[i] = strings.TrimSpace(string(res.Stdout))
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if o != "1" {
			t.Fatalf("call %d saw %q lines: the mutation ran more than once (%v)", i, o, outs)
		}
	}
	res, err := w.exec(t, req, rpc.CallOptions{IdempotencyKey: "k2"})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "2" {
		t.Fatalf("a new key: %q %v", res.Stdout, err)
	}
}

func TestBusyWhenWorkersAreFull(t *testing.T) {
	w := newWorld(t)
	r := w.start(t, agent.Config{Workers: 1})
	w.waitOnline(t, r.a.Instance())
	slow := make(chan error, 1)
	go func() {
		_, err := w.exec(t, &wire.ExecRequest{Command: heldCommand}, rpc.CallOptions{})
		slow <- err
	}()
	waitFile(t, filepath.Join(w.root, "running"))
	_, err := w.exec(t, &wire.ExecRequest{Argv: []string{"true"}}, rpc.CallOptions{})
	if we := wire.AsError(err); we.Code != wire.CodeUnavailable || we.Reason != wire.ReasonBusy {
		t.Fatalf("second request with one worker busy: %v, want unavailable/busy", err)
	}
	release(t, w.root)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}

// heldCommand is an exec that holds its worker and process slot until the
// test lets it go: it creates the file running in the root, then waits
// for release to create the file release.
const heldCommand = "touch running; while [ ! -e release ]; do sleep 0.01; done"

// release ends a heldCommand running in root.
func release(t *testing.T, root string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCleanStopIsOfflineAtOnce(t *testing.T) {
	w := newWorld(t)
	r := w.start(t, agent.Config{})
	w.waitOnline(t, r.a.Instance())
	if err := r.stop(); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	if err := w.pr.WaitStatus(tctx(t), laptop, presence.Offline); err != nil {
		t.Fatal(err)
	}
	_, err := w.exec(t, &wire.ExecRequest{Argv: []string{"true"}}, rpc.CallOptions{})
	if we := wire.AsError(err); we.Code != wire.CodeUnavailable || we.Reason != wire.ReasonAgentOffline || rpc.MaybeDelivered(err) {
		t.Fatalf("exec after stop: %v", err)
	}
}

// TestSilentSubscriberHoldsTheDaemonBack: something subscribed to the
// agent's rpc subject that never answers (a frozen daemon, or a server too
// busy to answer for it) keeps a new daemon from serving, but does not end
// it: it asks again past the claim's deadline and serves once the
// subscriber is gone. (It used to exit with ErrAlreadyServed, and stay
// down, 15 s into a connect storm.)
func TestSilentSubscriberHoldsTheDaemonBack(t *testing.T) {
	agent.ShortenClaim(t, 100*time.Millisecond, 300*time.Millisecond, 100*time.Millisecond)
	w := newWorld(t)
	rpcSubj, err := laptop.RPC()
	if err != nil {
		t.Fatal(err)
	}
	var probes atomic.Int64
	silent, err := w.nc.Subscribe(rpcSubj, func(*nats.Msg) { probes.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if err := w.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	r := w.start(t, agent.Config{})
	// Well past the claim's deadline (300 ms): still waiting, not serving.
	deadline := time.After(10 * time.Second)
	for probes.Load() < 8 {
		select {
		case err := <-r.done:
			t.Fatalf("Run returned while the subscriber was silent (after %d probes): %v", probes.Load(), err)
		case <-deadline:
			t.Fatalf("%d probes in 10 s, want 8 or more", probes.Load())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if e := w.pr.Get(laptop); e.Status == presence.Online {
		t.Fatalf("the daemon serves beside a silent subscriber: %+v", e)
	}
	if err := silent.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	w.waitOnline(t, r.a.Instance())
}

func TestOneDaemonPerIdentity(t *testing.T) {
	w := newWorld(t)
	lock := filepath.Join(t.TempDir(), "agent.lock")
	first := w.start(t, agent.Config{LockFile: lock})
	w.waitOnline(t, first.a.Instance())

	// Over NATS (another machine with the same credentials).
	second := w.start(t, agent.Config{})
	if err := second.wait(); !errors.Is(err, agent.ErrAlreadyServed) || strings.Contains(err.Error(), "lock") {
		t.Fatalf("second daemon: %v, want ErrAlreadyServed by the probe", err)
	}
	// On the same machine: the lock file refuses before NATS is asked.
	third := w.start(t, agent.Config{LockFile: lock})
	if err := third.wait(); !errors.Is(err, agent.ErrAlreadyServed) || !strings.Contains(err.Error(), "lock") {
		t.Fatalf("third daemon: %v, want ErrAlreadyServed by the lock", err)
	}
	w.waitOnline(t, first.a.Instance())

	// Takeover: the live daemon stops, the new one serves, presence follows it.
	taker := w.start(t, agent.Config{LockFile: lock, Takeover: true})
	if err := first.wait(); !errors.Is(err, agent.ErrTakenOver) {
		t.Fatalf("first daemon after takeover: %v, want ErrTakenOver", err)
	}
	w.waitOnline(t, taker.a.Instance())
	if _, err := w.exec(t, &wire.ExecRequest{Argv: []string{"true"}}, rpc.CallOptions{}); err != nil {
		t.Fatalf("exec after takeover: %v", err)
	}
}

func TestReconnectsAfterNATSRestart(t *testing.T) {
	w := newWorld(t)
	r := w.start(t, agent.Config{})
	w.waitOnline(t, r.a.Instance())
	w.auth.Restart(t)
	ctx := tctx(t)
	for {
		_, err := w.exec(t, &wire.ExecRequest{Argv: []string{"echo", "back"}}, rpc.CallOptions{Timeout: 2 * time.Second})
		if err == nil {
			break
		}
		if we := wire.AsError(err); we.Code != wire.CodeUnavailable && we.Code != wire.CodeDeadlineExceeded {
			t.Fatalf("exec during the outage: %v, want unavailable", err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("agent never came back: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	w.waitOnline(t, r.a.Instance())
}

// TestBusyWhenProcessesAreFull: with a cap of 3, three live processes (two
// started, one exec) fill it; a fourth, started or exec'd, is
// unavailable/busy; once one ends, a start works again.
func TestBusyWhenProcessesAreFull(t *testing.T) {
	w := newWorld(t)
	r := w.start(t, agent.Config{MaxProcesses: 3})
	w.waitOnline(t, r.a.Instance())
	startSleep := func(id string) error {
		var res wire.ProcStartResult
		return w.calls.Call(tctx(t), laptop, wire.OpProcStart, &wire.ProcStartRequest{ID: id, Argv: []string{"sleep", "60"}}, &res, rpc.CallOptions{})
	}
	for _, id := range []string{"p1", "p2"} {
		if err := startSleep(id); err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
	}
	execDone := make(chan error, 1)
	go func() {
		_, err := w.exec(t, &wire.ExecRequest{Command: heldCommand}, rpc.CallOptions{})
		execDone <- err
	}()
	waitFile(t, filepath.Join(w.root, "running"))
	wantBusy := func(what string, err error) {
		t.Helper()
		if we := wire.AsError(err); we == nil || we.Code != wire.CodeUnavailable || we.Reason != wire.ReasonBusy || !we.Retryable {
			t.Fatalf("%s with 3 of 3 processes alive: %v, want unavailable/busy", what, err)
		}
	}
	wantBusy("start", startSleep("p4"))
	_, err := w.exec(t, &wire.ExecRequest{Argv: []string{"true"}}, rpc.CallOptions{})
	wantBusy("exec", err)
	release(t, w.root)
	if err := <-execDone; err != nil {
		t.Fatalf("the exec that held a slot: %v", err)
	}
	if err := startSleep("p4"); err != nil {
		t.Fatalf("start after the exec ended: %v", err)
	}
	wantBusy("start", startSleep("p5"))
	var term wire.ProcTerminateResult
	if err := w.calls.Call(tctx(t), laptop, wire.OpProcTerminate, &wire.ProcRef{ID: "p1"}, &term, rpc.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx := tctx(t)
	for {
		err := startSleep("p5")
		if err == nil {
			break
		}
		if !errors.Is(err, &wire.Error{Code: wire.CodeUnavailable, Reason: wire.ReasonBusy}) || ctx.Err() != nil {
			t.Fatalf("start after p1 was terminated: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFile waits until name exists.
func waitFile(t *testing.T, name string) {
	t.Helper()
	ctx := tctx(t)
	for {
		if _, err := os.Stat(name); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never appeared", name)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestExecOutputCapFitsTheReply: an exec asking for a 400 MB cap gets at
// most what one reply carries per stream (wire.MaxExecOutput of the max
// payload), so two full streams come back instead of payload_too_large,
// and a tiny output with the huge cap is just that output.
func TestExecOutputCapFitsTheReply(t *testing.T) {
	w := newWorld(t)
	r := w.start(t, agent.Config{})
	w.waitOnline(t, r.a.Instance())
	limit := wire.MaxExecOutput(w.nc.MaxPayload())
	res, err := w.exec(t, &wire.ExecRequest{Command: "head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2", OutputCap: 400 << 20}, rpc.CallOptions{})
	if err != nil {
		t.Fatalf("exec with a 400 MB cap and 3 MB per stream: %v", err)
	}
	if len(res.Stdout) != limit || len(res.Stderr) != limit || !res.Truncated {
		t.Fatalf("got %d and %d bytes, truncated %v; want %d each, truncated", len(res.Stdout), len(res.Stderr), res.Truncated, limit)
	}
	res, err = w.exec(t, &wire.ExecRequest{Argv: []string{"echo", "hi"}, OutputCap: 400 << 20}, rpc.CallOptions{})
	if err != nil || string(res.Stdout) != "hi\n" || res.Truncated {
		t.Fatalf("tiny output with a 400 MB cap: %+v, %v", res, err)
	}
}
