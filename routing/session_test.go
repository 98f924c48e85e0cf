package routing

import (
	"sync"
	"testing"

	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// A swap mid-session routes the next call to the new backend, with the new
// epoch on the wire, and tells the old backend that epoch (its fence).
func TestSwapRoutesNextCall(t *testing.T) {
	f := newFixture(t)
	s, a1, a2 := f.twoAgents()
	a1.Handle(wire.OpExec, execOf("a1"))
	a2.Handle(wire.OpExec, execOf("a2"))

	var res wire.ExecResult
	route, err := s.Call(ctx(t), wire.OpExec, &wire.ExecRequest{Argv: []string{"true"}}, &res, rpc.CallOptions{})
	if err != nil || string(res.Stdout) != "a1" || route != (Route{Backend: "laptop", Agent: "a1", Epoch: 1}) {
		t.Fatalf("before swap: route %+v, stdout %q, err %v; want laptop/a1 at epoch 1", route, res.Stdout, err)
	}
	st, err := s.Swap(ctx(t), "desk", 0)
	if err != nil {
		t.Fatalf("swap: %v", err)
	}
	if st.Active != "desk" || st.Epoch != 2 || len(st.Transitions) != 1 {
		t.Fatalf("after swap: %+v, want active desk at epoch 2 with one transition", st)
	}
	if tr := st.Transitions[0]; tr.From != "laptop" || tr.To != "desk" || tr.Epoch != 2 || tr.Agent != "a2" || tr.At.IsZero() {
		t.Fatalf("transition %+v, want laptop → desk (a2) at epoch 2", tr)
	}
	route, err = s.Call(ctx(t), wire.OpExec, &wire.ExecRequest{Argv: []string{"true"}}, &res, rpc.CallOptions{})
	if err != nil || string(res.Stdout) != "a2" || route != (Route{Backend: "desk", Agent: "a2", Epoch: 2}) {
		t.Fatalf("after swap: route %+v, stdout %q, err %v; want desk/a2 at epoch 2", route, res.Stdout, err)
	}
	if got := sessionRequests(a2, st, wire.OpExec); len(got) != 1 || got[0].Epoch != 2 {
		t.Fatalf("a2 saw %d session execs (%+v), want 1 at epoch 2", len(got), got)
	}
	if got := sessionRequests(a1, st, wire.OpExec); len(got) != 1 || got[0].Epoch != 1 {
		t.Fatalf("a1 saw %d session execs, want 1 at epoch 1", len(got))
	}
	pings := sessionRequests(a1, st, wire.OpPing)
	if len(pings) != 1 || pings[0].Epoch != 2 {
		t.Fatalf("old backend saw session pings %+v, want one fence at epoch 2", pings)
	}
}

// A read that raced a swap is run again on the new backend; its result is
// the new backend's, never a mix of both.
func TestReadRacingSwapIsRetried(t *testing.T) {
	f := newFixture(t)
	s, a1, a2 := f.twoAgents()
	g := newGate()
	a1.Handle(wire.OpCapabilities, func(*wire.Request) (any, error) {
		g.wait()
		h := a1.Hello()
		h.GitVersion = "only-on-a1"
		return &h, nil
	})

	type result struct {
		route Route
		hello wire.Hello
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.route, r.err = s.Call(ctx(t), wire.OpCapabilities, nil, &r.hello, rpc.CallOptions{})
		done <- r
	}()
	g.waitEntered(t)
	if _, err := s.Swap(ctx(t), "desk", 1); err != nil {
		t.Fatalf("swap: %v", err)
	}
	g.release()
	r := <-done
	if r.err != nil {
		t.Fatalf("read racing a swap: %v, want it retried on the new backend", r.err)
	}
	if r.route != (Route{Backend: "desk", Agent: "a2", Epoch: 2}) || r.hello.Agent != "a2" || r.hello.GitVersion != "" {
		t.Fatalf("read answered by %+v with hello of %q (git %q), want desk/a2 at epoch 2 only", r.route, r.hello.Agent, r.hello.GitVersion)
	}
	if n1, n2 := a1.Count(wire.OpCapabilities), a2.Count(wire.OpCapabilities); n1 != 1 || n2 != 1 {
		t.Fatalf("capabilities seen by a1 %d, a2 %d; want 1 and 1", n1, n2)
	}
}

// A mutation that raced a swap is never run twice: it reports
// conflict/outcome_unknown and the new backend never sees it.
func TestMutationRacingSwapIsNotReplayed(t *testing.T) {
	f := newFixture(t)
	s, a1, a2 := f.twoAgents()
	g := newGate()
	a1.Handle(wire.OpExec, func(*wire.Request) (any, error) {
		g.wait()
		return &wire.ExecResult{Stdout: []byte("a1")}, nil
	})
	a2.Handle(wire.OpExec, execOf("a2"))

	done := make(chan error, 1)
	go func() {
		var res wire.ExecResult
		_, err := s.Call(ctx(t), wire.OpExec, &wire.ExecRequest{Argv: []string{"touch", "x"}}, &res, rpc.CallOptions{IdempotencyKey: "k1"})
		done <- err
	}()
	g.waitEntered(t)
	if _, err := s.Swap(ctx(t), "desk", 0); err != nil {
		t.Fatalf("swap: %v", err)
	}
	g.release()
	wantErr(t, <-done, wire.CodeConflict, wire.ReasonOutcomeUnknown)
	if n1, n2 := a1.Count(wire.OpExec), a2.Count(wire.OpExec); n1 != 1 || n2 != 0 {
		t.Fatalf("exec seen by a1 %d, a2 %d; want 1 and 0 (never replayed)", n1, n2)
	}
}

// A mutation the old backend refused before running it (its fence saw the
// new epoch) is safe to send again, and runs once, on the new backend.
func TestFencedMutationRunsOnceOnNewBackend(t *testing.T) {
	f := newFixture(t)
	s, a1, a2 := f.twoAgents()
	g := newGate()
	a1.Handle(wire.OpExec, func(req *wire.Request) (any, error) {
		g.wait()
		return nil, wire.Errorf(wire.CodeConflict, wire.ReasonFenced, "session %s is at a newer epoch", req.Session)
	})
	a2.Handle(wire.OpExec, execOf("a2"))

	type result struct {
		route Route
		res   wire.ExecResult
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.route, r.err = s.Call(ctx(t), wire.OpExec, &wire.ExecRequest{Argv: []string{"true"}}, &r.res, rpc.CallOptions{IdempotencyKey: "k2"})
		done <- r
	}()
	g.waitEntered(t)
	if _, err := s.Swap(ctx(t), "desk", 0); err != nil {
		t.Fatalf("swap: %v", err)
	}
	g.release()
	r := <-done
	if r.err != nil || string(r.res.Stdout) != "a2" || r.route.Backend != "desk" {
		t.Fatalf("fenced mutation: route %+v stdout %q err %v; want it run on desk", r.route, r.res.Stdout, r.err)
	}
	reqs := a2.Requests()
	n := 0
	for _, req := range reqs {
		if req.Op == wire.OpExec {
			n++
			if req.IdempotencyKey != "k2" || req.Epoch != 2 {
				t.Fatalf("a2 exec carried key %q epoch %d, want k2 at epoch 2", req.IdempotencyKey, req.Epoch)
			}
		}
	}
	if n != 1 {
		t.Fatalf("a2 ran exec %d times, want 1", n)
	}
}

// Of concurrent swaps with the same ifEpoch exactly one wins; the others
// answer conflict/epoch_mismatch and the epoch moves by one.
func TestConcurrentSwapsSameIfEpoch(t *testing.T) {
	f := newFixture(t)
	s, _, _ := f.twoAgents()
	f.agent("a3", "")
	st := f.state(s)
	st.Backends["spare"] = Spec{Kind: KindAgent, Agent: "a3"}
	if err := f.router.save(ctx(t), st); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		before := f.state(s)
		var targets []string // every backend but the active one, three times
		for range 3 {
			for name := range before.Backends {
				if name != before.Active {
					targets = append(targets, name)
				}
			}
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, len(targets))
		for i, to := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = s.Swap(ctx(t), to, before.Epoch)
			}()
		}
		close(start)
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !isCode(err, wire.CodeConflict, wire.ReasonEpochMismatch):
				t.Fatalf("round %d: swap failed with %v, want success or epoch_mismatch", round, err)
			}
		}
		if after := f.state(s); wins != 1 || after.Epoch != before.Epoch+1 {
			t.Fatalf("round %d: %d of %d swaps won, epoch %d → %d; want exactly one", round, wins, len(targets), before.Epoch, after.Epoch)
		}
	}
}

func isCode(err error, code wire.Code, reason string) bool {
	we := wire.AsError(err)
	return we.Code == code && we.Reason == reason
}

// An epoch given as ifEpoch that is not the session's is refused.
func TestSwapIfEpochMismatch(t *testing.T) {
	f := newFixture(t)
	s, _, _ := f.twoAgents()
	_, err := s.Swap(ctx(t), "desk", 7)
	wantErr(t, err, wire.CodeConflict, wire.ReasonEpochMismatch)
	if st := f.state(s); st.Active != "laptop" || st.Epoch != 1 {
		t.Fatalf("after a refused swap: active %s epoch %d, want laptop 1", st.Active, st.Epoch)
	}
}

func TestSwapRefusals(t *testing.T) {
	f := newFixture(t)
	s, _, a2 := f.twoAgents()
	f.enrolled("never", "")
	frozen := f.agent("frozen", "")
	frozen.SetFrozen(true)
	st := f.state(s)
	st.Backends["asleep"] = Spec{Kind: KindAgent, Agent: "never"}
	st.Backends["frozen"] = Spec{Kind: KindAgent, Agent: "frozen"}
	st.Backends["cloud"] = Spec{Kind: KindPool, Pool: "empty"}
	if err := f.router.save(ctx(t), st); err != nil {
		t.Fatal(err)
	}
	f.stop(a2)

	tests := []struct {
		name   string
		to     string
		code   wire.Code
		reason string
	}{
		{"unknown backend", "nope", wire.CodeInvalidArgument, ""},
		{"offline agent", "desk", wire.CodeUnavailable, wire.ReasonAgentOffline},
		{"never connected", "asleep", wire.CodeUnavailable, wire.ReasonAgentOffline},
		{"frozen agent", "frozen", wire.CodeUnavailable, wire.ReasonNotResponding},
		{"empty pool", "cloud", wire.CodeUnavailable, wire.ReasonPoolExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Swap(ctx(t), tt.to, 0)
			wantErr(t, err, tt.code, tt.reason)
			if st := f.state(s); st.Active != "laptop" || st.Epoch != 1 {
				t.Fatalf("pointer moved to %s at epoch %d; a refused swap must not move it", st.Active, st.Epoch)
			}
		})
	}
	if l := f.leases(); len(l) != 0 {
		t.Fatalf("refused swaps left claims %v", l)
	}
}

// Swapping to the backend already active changes nothing.
func TestSwapToActiveIsNoop(t *testing.T) {
	f := newFixture(t)
	s, _, _ := f.twoAgents()
	st, err := s.Swap(ctx(t), "laptop", 1)
	if err != nil || st.Epoch != 1 || len(st.Transitions) != 0 {
		t.Fatalf("swap to active: %+v, %v; want epoch 1, no transition", st, err)
	}
}

// A session deleted and made again under the same id while a call ran is
// a new incarnation (new UID, epoch 1 again): the call counts as having
// raced a move, so a mutation answers outcome_unknown, never "done".
func TestRecreatedSessionCountsAsMoved(t *testing.T) {
	f := newFixture(t)
	s, a1, _ := f.twoAgents()
	g := newGate()
	a1.Handle(wire.OpExec, func(*wire.Request) (any, error) {
		g.wait()
		return &wire.ExecResult{Stdout: []byte("a1")}, nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx(t), wire.OpExec, &wire.ExecRequest{Argv: []string{"true"}}, nil, rpc.CallOptions{})
		done <- err
	}()
	g.waitEntered(t)
	old := f.state(s)
	if err := s.Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
	again := f.create(CreateRequest{ID: "s1", Active: "laptop", Backends: old.Backends})
	if st := f.state(again); st.Epoch != old.Epoch || st.UID == old.UID {
		t.Fatalf("made again: epoch %d uid %s; want epoch %d and a new uid", st.Epoch, st.UID, old.Epoch)
	}
	g.release()
	wantErr(t, <-done, wire.CodeConflict, wire.ReasonOutcomeUnknown)
}
