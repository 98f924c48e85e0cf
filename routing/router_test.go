package routing

import (
	"testing"

	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

func TestCreateRejects(t *testing.T) {
	f := newFixture(t)
	f.enrolled("a1", "")
	laptop := Spec{Kind: KindAgent, Agent: "a1"}
	tests := []struct {
		name   string
		req    CreateRequest
		code   wire.Code
		reason string
	}{
		{"no backends", CreateRequest{Active: "x"}, wire.CodeInvalidArgument, ""},
		{"bad id", CreateRequest{ID: "Bad.Id", Active: "laptop", Backends: map[string]Spec{"laptop": laptop}}, wire.CodeInvalidArgument, ""},
		{"bad backend name", CreateRequest{Active: "a b", Backends: map[string]Spec{"a b": laptop}}, wire.CodeInvalidArgument, ""},
		{"unknown active", CreateRequest{Active: "cloud", Backends: map[string]Spec{"laptop": laptop}}, wire.CodeInvalidArgument, ""},
		{"unknown kind", CreateRequest{Active: "x", Backends: map[string]Spec{"x": {Kind: "vm", Agent: "a1"}}}, wire.CodeInvalidArgument, ""},
		{"agent without id", CreateRequest{Active: "x", Backends: map[string]Spec{"x": {Kind: KindAgent}}}, wire.CodeInvalidArgument, ""},
		{"agent with pool", CreateRequest{Active: "x", Backends: map[string]Spec{"x": {Kind: KindAgent, Agent: "a1", Pool: "p"}}}, wire.CodeInvalidArgument, ""},
		{"pool with agent", CreateRequest{Active: "x", Backends: map[string]Spec{"x": {Kind: KindPool, Pool: "p", Agent: "a1"}}}, wire.CodeInvalidArgument, ""},
		{"agent not enrolled", CreateRequest{Active: "x", Backends: map[string]Spec{"x": {Kind: KindAgent, Agent: "ghost"}}}, wire.CodeNotFound, ""},
		{"active pool empty", CreateRequest{Active: "x", Backends: map[string]Spec{"x": {Kind: KindPool, Pool: "p"}}}, wire.CodeUnavailable, wire.ReasonPoolExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.router.Create(ctx(t), ws, tt.req)
			wantErr(t, err, tt.code, tt.reason)
		})
	}
	if l, err := f.router.List(ctx(t), ws); err != nil || len(l) != 0 {
		t.Fatalf("refused creates stored %d sessions (%v)", len(l), err)
	}
}

// A laptop that is asleep may still be the active backend of a new
// session: its calls answer 503 until it is back.
func TestCreateWithOfflineAgent(t *testing.T) {
	f := newFixture(t)
	f.enrolled("a1", "")
	s := f.create(CreateRequest{Active: "laptop", Backends: map[string]Spec{"laptop": {Kind: KindAgent, Agent: "a1"}}})
	st := f.state(s)
	if st.Epoch != 1 || st.Active != "laptop" || len(st.ID) != len("s-12345678") || st.UID == "" {
		t.Fatalf("created %+v, want a generated id at epoch 1", st)
	}
	_, err := s.Call(ctx(t), wire.OpPing, nil, nil, rpc.CallOptions{})
	wantErr(t, err, wire.CodeUnavailable, wire.ReasonAgentOffline)
}

func TestCreateDuplicateAndDelete(t *testing.T) {
	f := newFixture(t)
	f.enrolled("a1", "")
	req := CreateRequest{ID: "dup", Active: "laptop", Backends: map[string]Spec{"laptop": {Kind: KindAgent, Agent: "a1"}}}
	s := f.create(req)
	first := f.state(s)
	_, err := f.router.Create(ctx(t), ws, req)
	wantErr(t, err, wire.CodeConflict, wire.ReasonAlreadyExists)
	if err := s.Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.Delete(ctx(t)), wire.CodeNotFound, "")
	_, err = s.Swap(ctx(t), "laptop", 0)
	wantErr(t, err, wire.CodeNotFound, "")
	_, err = s.Call(ctx(t), wire.OpPing, nil, nil, rpc.CallOptions{})
	wantErr(t, err, wire.CodeNotFound, "")

	// The same id again is a new incarnation: a new UID, so agents'
	// fences of the old one do not refuse it.
	again := f.state(f.create(req))
	if again.UID == first.UID || again.Epoch != 1 {
		t.Fatalf("recreated session: uid %s (was %s) epoch %d; want a new uid at epoch 1", again.UID, first.UID, again.Epoch)
	}
	list, err := f.router.List(ctx(t), ws)
	if err != nil || len(list) != 1 || list[0].ID != "dup" {
		t.Fatalf("list: %v, %v; want [dup]", list, err)
	}
}

func TestTransitionsAreBounded(t *testing.T) {
	f := newFixture(t)
	s, _, _ := f.twoAgents()
	st := f.state(s)
	for range MaxTransitions + 5 {
		to := "desk"
		if st.Active == "desk" {
			to = "laptop"
		}
		st.move(to, st.CreatedAt)
	}
	if len(st.Transitions) != MaxTransitions || st.Transitions[len(st.Transitions)-1].Epoch != st.Epoch {
		t.Fatalf("%d transitions ending at epoch %d (session at %d), want %d ending at the session's", len(st.Transitions), st.Transitions[len(st.Transitions)-1].Epoch, st.Epoch, MaxTransitions)
	}
}
