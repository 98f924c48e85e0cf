package routing

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// laptopAndCloud is a session with "laptop" (agent a1) and "cloud" (pool
// cloud), active as given.
func (f *fixture) laptopAndCloud(id, active string) *Session {
	f.t.Helper()
	return f.create(CreateRequest{ID: id, Active: active, Backends: map[string]Spec{
		"laptop": {Kind: KindAgent, Agent: "a1"},
		"cloud":  {Kind: KindPool, Pool: "cloud"},
	}})
}

// An offline agent backend answers 503, is never replaced, and is never a
// reason to claim anything from a pool.
func TestOfflineAgentBackendIsNotReplaced(t *testing.T) {
	f := newFixture(t)
	a1 := f.agent("a1", "")
	p1 := f.agent("p1", "cloud")
	s := f.laptopAndCloud("s1", "laptop")
	f.stop(a1)

	for range 3 {
		_, err := s.Call(ctx(t), wire.OpExec, &wire.ExecRequest{Argv: []string{"true"}}, nil, rpc.CallOptions{})
		wantErr(t, err, wire.CodeUnavailable, wire.ReasonAgentOffline)
		_, err = s.Call(ctx(t), wire.OpCapabilities, nil, nil, rpc.CallOptions{})
		wantErr(t, err, wire.CodeUnavailable, wire.ReasonAgentOffline)
	}
	if l := f.leases(); len(l) != 0 {
		t.Fatalf("an offline agent backend claimed %v", l)
	}
	if st := f.state(s); st.Active != "laptop" || st.Epoch != 1 || len(st.Claims) != 0 {
		t.Fatalf("session changed: %+v", st)
	}
	if n := p1.Count(""); n != 0 {
		t.Fatalf("the pool agent saw %d requests, want 0", n)
	}
}

// A pool backend claims an agent at swap time and keeps it across swaps.
func TestPoolClaimIsSticky(t *testing.T) {
	f := newFixture(t)
	f.agent("a1", "")
	f.agent("p1", "cloud")
	f.agent("p2", "cloud")
	s := f.laptopAndCloud("s1", "laptop")
	if l := f.leases(); len(l) != 0 {
		t.Fatalf("an inactive pool backend claimed %v at create", l)
	}
	for i, to := range []string{"cloud", "laptop", "cloud"} {
		st, err := s.Swap(ctx(t), to, 0)
		if err != nil {
			t.Fatalf("swap %d to %s: %v", i, to, err)
		}
		if st.Claims["cloud"] != "p1" {
			t.Fatalf("swap %d: claims %v, want cloud → p1 throughout", i, st.Claims)
		}
	}
	if l := f.leases(); !slices.Equal(l, []string{ws + ".p1"}) {
		t.Fatalf("leases %v, want only p1's", l)
	}
}

// When the claimed pool agent is gone for good (revoked, or offline past
// its reconnect window, goodbye or not), the next call claims another,
// moves the epoch and runs there. Inside the window it is kept: calls
// answer 503 and nothing is claimed, so a pool agent that restarts keeps
// its sessions.
func TestGonePoolAgentIsReplaced(t *testing.T) {
	pastWindow := presence.DefaultWindow + 10*time.Second
	tests := []struct {
		name string
		// leave makes p1 leave; kept is the reason calls answer inside the
		// window ("" when p1 is gone at once).
		leave func(f *fixture, p *pooled)
		kept  string
	}{
		{"revoked", func(f *fixture, p *pooled) { f.dir.revoke("p1"); _ = p.p1.SetOnline(false) }, ""},
		{"goodbye", func(f *fixture, p *pooled) { f.stop(p.p1) }, wire.ReasonAgentOffline},
		{"vanished", func(f *fixture, p *pooled) {
			p.p1.StopHeartbeats()
			if err := p.p1.SetOnline(false); err != nil {
				f.t.Fatal(err)
			}
		}, wire.ReasonAgentReconnecting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			p := f.pooled()
			tt.leave(f, p)
			exec := &wire.ExecRequest{Argv: []string{"true"}}
			if tt.kept != "" {
				_, err := p.s.Call(ctx(t), wire.OpExec, exec, nil, rpc.CallOptions{})
				wantErr(t, err, wire.CodeUnavailable, tt.kept)
				if st := f.state(p.s); st.Claims["cloud"] != "p1" || st.Epoch != 1 {
					t.Fatalf("inside the window: %+v, want cloud still holding p1 at epoch 1", st)
				}
				f.clock.advance(pastWindow)
				f.waitStatus("p1", presence.Offline)
				f.waitStatus("p2", presence.Online) // its next heartbeat, on the new clock
			}
			var res wire.ExecResult
			route, err := p.s.Call(ctx(t), wire.OpExec, exec, &res, rpc.CallOptions{})
			if err != nil || string(res.Stdout) != "p2" || route != (Route{Backend: "cloud", Agent: "p2", Epoch: 2}) {
				t.Fatalf("after p1 left: route %+v stdout %q err %v; want cloud/p2 at epoch 2", route, res.Stdout, err)
			}
			st := f.state(p.s)
			last := st.Transitions[len(st.Transitions)-1]
			if st.Claims["cloud"] != "p2" || last.From != "cloud" || last.To != "cloud" || last.Agent != "p2" {
				t.Fatalf("claims %v, last transition %+v; want cloud → p2 recorded", st.Claims, last)
			}
			if l := f.leases(); !slices.Equal(l, []string{ws + ".p2"}) {
				t.Fatalf("leases %v, want p1's released and p2's taken", l)
			}
			if n := p.p1.Count(wire.OpExec); n != 0 {
				t.Fatalf("p1 ran exec %d times after it left, want 0", n)
			}
		})
	}
}

// pooled is a session active on pool cloud, holding p1, with p2 free.
type pooled struct {
	s      *Session
	p1, p2 *agenttest.Agent
}

func (f *fixture) pooled() *pooled {
	f.t.Helper()
	f.agent("a1", "")
	p1 := f.agent("p1", "cloud")
	p2 := f.agent("p2", "cloud")
	p1.Handle(wire.OpExec, execOf("p1"))
	p2.Handle(wire.OpExec, execOf("p2"))
	s := f.laptopAndCloud("s1", "cloud")
	if st := f.state(s); st.Claims["cloud"] != "p1" || st.Epoch != 1 {
		f.t.Fatalf("created %+v, want cloud holding p1 at epoch 1", st)
	}
	return &pooled{s: s, p1: p1, p2: p2}
}

// A pool agent that is only reconnecting (it vanished without goodbye,
// inside the reconnect window) is not replaced: calls answer 503.
func TestReconnectingPoolAgentIsKept(t *testing.T) {
	f := newFixture(t)
	f.agent("a1", "")
	p1 := f.agent("p1", "cloud")
	f.agent("p2", "cloud")
	s := f.laptopAndCloud("s1", "cloud")
	p1.StopHeartbeats()
	if err := p1.SetOnline(false); err != nil {
		t.Fatal(err)
	}
	_, err := s.Call(ctx(t), wire.OpExec, &wire.ExecRequest{Argv: []string{"true"}}, nil, rpc.CallOptions{})
	wantErr(t, err, wire.CodeUnavailable, wire.ReasonAgentReconnecting)
	if st := f.state(s); st.Claims["cloud"] != "p1" || st.Epoch != 1 {
		t.Fatalf("a reconnecting agent was replaced: %+v", st)
	}
}

// Pool agents are held by one session at a time; deleting a session
// releases its claims for others.
func TestPoolClaimsAreExclusive(t *testing.T) {
	f := newFixture(t)
	f.agent("a1", "")
	f.agent("p1", "cloud")
	s1 := f.laptopAndCloud("s1", "cloud")
	_, err := f.router.Create(ctx(t), ws, CreateRequest{ID: "s2", Active: "cloud", Backends: map[string]Spec{"cloud": {Kind: KindPool, Pool: "cloud"}}})
	wantErr(t, err, wire.CodeUnavailable, wire.ReasonPoolExhausted)

	s2 := f.laptopAndCloud("s2", "laptop")
	_, err = s2.Swap(ctx(t), "cloud", 0)
	wantErr(t, err, wire.CodeUnavailable, wire.ReasonPoolExhausted)

	if err := s1.Delete(ctx(t)); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := s1.State(ctx(t)); !isCode(err, wire.CodeNotFound, "") {
		t.Fatalf("deleted session: %v, want not_found", err)
	}
	st, err := s2.Swap(ctx(t), "cloud", 0)
	if err != nil || st.Claims["cloud"] != "p1" {
		t.Fatalf("swap after release: %+v, %v; want cloud holding p1", st, err)
	}
}

// A lease whose session never recorded it (a writer that crashed between
// the two writes) is taken over once it is older than the grace.
func TestStaleLeaseIsTakenOver(t *testing.T) {
	f := newFixture(t)
	f.agent("a1", "")
	f.agent("p1", "cloud")
	b, _ := json.Marshal(lease{Workspace: ws, Pool: "cloud", Agent: "p1", Session: "crashed", UID: "x", Backend: "cloud", At: time.Now().Add(-time.Hour)})
	if _, err := f.claims.Create(ctx(t), claimKey(ws, "p1"), b); err != nil {
		t.Fatal(err)
	}
	s := f.laptopAndCloud("s1", "cloud")
	if st := f.state(s); st.Claims["cloud"] != "p1" {
		t.Fatalf("claims %v, want the stale lease of p1 taken over", st.Claims)
	}
	l, _, err := f.router.readLease(ctx(t), ws, "p1")
	if err != nil || l.Session != "s1" {
		t.Fatalf("lease %+v, %v; want held by s1", l, err)
	}
}
