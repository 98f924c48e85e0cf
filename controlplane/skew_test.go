package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/routing"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// An agent whose hello says it speaks a protocol older than the control
// plane serves is shown as such, and calls to it say why they fail; the
// same agent saying the current protocol is served.
func TestAgentProtocolSkew(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	if _, err := admin.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	a := enrollAgent(t, s, "ws1", "old")
	nc, err := a.connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	hello := func(instance string, protocol int) {
		t.Helper()
		b, err := wire.Marshal(&wire.Hello{Workspace: "ws1", Agent: "old", Instance: instance, Version: "0.9.0", Protocol: protocol, HeartbeatMs: 60000})
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish(mustSubject(t, a.ag, subjects.KindHello), b); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	hello("i-old", wire.OldestVersion-1)
	var got *client.Agent
	waitFor(t, waitLong, "the old agent's hello", func() bool {
		got, err = admin.GetAgent(ctx, "ws1", "old")
		return err == nil && got.Status == client.StatusOnline && got.Protocol == wire.OldestVersion-1
	})
	if !strings.Contains(got.StatusDetail, "update the agent") {
		t.Fatalf("statusDetail %q does not say to update the agent", got.StatusDetail)
	}
	_, err = admin.Agent("ws1", "old").Exec(ctx, client.ExecRequest{Argv: []string{"true"}})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeUnsupported || we.Reason != wire.ReasonAgentTooOld || !strings.Contains(we.Message, "protocol") {
		t.Fatalf("exec on a too-old agent: %v, want unsupported/agent_too_old", err)
	}

	hello("i-new", wire.Version)
	waitFor(t, waitLong, "the current hello", func() bool {
		got, err = admin.GetAgent(ctx, "ws1", "old")
		return err == nil && got.Protocol == wire.Version
	})
	if got.StatusDetail != "" {
		t.Fatalf("statusDetail of a served agent: %q", got.StatusDetail)
	}
}

// After a restart, presence is seeded from the stored records until each
// agent is heard from again. A record holds no protocol until a hello was
// stored (enrollment alone fills in the version): such an agent must not be
// refused as too old (protocol 0) in that window, while a stored protocol
// the control plane no longer serves still is.
func TestSeededHelloProtocol(t *testing.T) {
	ag := subjects.Agent{Workspace: "ws1", ID: "a1"}
	cases := []struct {
		name    string
		rec     agentRecord
		refused bool
	}{
		{"enrolled, no hello stored", agentRecord{Workspace: "ws1", ID: "a1", Version: "1.0.0"}, false},
		{"hello stored", agentRecord{Workspace: "ws1", ID: "a1", Instance: "i1", Version: "1.0.0", Protocol: wire.Version}, false},
		{"stored protocol too new", agentRecord{Workspace: "ws1", ID: "a1", Instance: "i1", Version: "9.0.0", Protocol: wire.Version + 1}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.rec.hello()
			if h == nil {
				t.Fatal("no seeded hello from a record with a version")
			}
			if err := tooOld(ag, h); (err != nil) != tc.refused {
				t.Fatalf("tooOld = %v, want refused %v", err, tc.refused)
			}
		})
	}
}

// A session refuses a call to an active backend whose agent speaks a
// protocol this control plane does not serve, as the agent path does: 501
// agent_too_old, and nothing reaches the agent. Swapped onto a served
// agent, the same session's calls go through.
func TestSessionRefusesUnservedProtocol(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	if _, err := admin.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	execOK := func(*wire.Request) (any, error) { return &wire.ExecResult{Stdout: []byte("ran\n")}, nil }
	skewed, _ := serveMock(t, enrollAgent(t, s, "ws1", "skewed"), agenttest.WithHello(wire.Hello{Protocol: wire.Version + 1}))
	skewed.Handle(wire.OpExec, execOK)
	served, _ := serveMock(t, enrollAgent(t, s, "ws1", "served"))
	served.Handle(wire.OpExec, execOK)
	waitFor(t, waitLong, "both agents online", func() bool {
		a, err := admin.GetAgent(ctx, "ws1", "skewed")
		b, err2 := admin.GetAgent(ctx, "ws1", "served")
		return err == nil && err2 == nil && a.Status == client.StatusOnline && a.Protocol == wire.Version+1 && b.Status == client.StatusOnline
	})
	if _, err := admin.CreateSession(ctx, "ws1", client.CreateSessionRequest{ID: "s1", Active: "a",
		Backends: map[string]client.SessionBackend{"a": {Kind: client.KindAgent, Agent: "skewed"}, "b": {Kind: client.KindAgent, Agent: "served"}}}); err != nil {
		t.Fatal(err)
	}
	sess := admin.Session("ws1", "s1")
	_, err := sess.Exec(ctx, client.ExecRequest{Argv: []string{"true"}})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeUnsupported || we.Reason != wire.ReasonAgentTooOld || !strings.Contains(we.Message, "update the control plane") {
		t.Fatalf("exec through a session on an agent of a newer protocol: %v, want unsupported/agent_too_old", err)
	}
	if n := skewed.Count(wire.OpExec); n != 0 {
		t.Fatalf("the refused exec reached the agent (%d)", n)
	}
	// A pool backend has no agent until its first call claims one: the
	// check is on the agent each call reaches.
	tok, err := admin.CreateEnrollmentToken(ctx, "ws1", client.EnrollmentTokenRequest{Agent: "pooled", Pool: "old"})
	if err != nil {
		t.Fatal(err)
	}
	pooled, _ := serveMock(t, redeem(t, s, tok.Token, ""), agenttest.WithHello(wire.Hello{Protocol: wire.Version + 1}))
	pooled.Handle(wire.OpExec, execOK)
	waitFor(t, waitLong, "the pool agent online", func() bool {
		a, err := admin.GetAgent(ctx, "ws1", "pooled")
		return err == nil && a.Status == client.StatusOnline && a.Protocol == wire.Version+1
	})
	if _, err := admin.CreateSession(ctx, "ws1", client.CreateSessionRequest{ID: "s2", Active: "p",
		Backends: map[string]client.SessionBackend{"p": {Kind: client.KindPool, Pool: "old"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = admin.Session("ws1", "s2").Exec(ctx, client.ExecRequest{Argv: []string{"true"}})
	if !errors.As(err, &we) || we.Reason != wire.ReasonAgentTooOld || pooled.Count(wire.OpExec) != 0 {
		t.Fatalf("exec through a pool session on an agent of a newer protocol: %v (reached it %d times), want agent_too_old", err, pooled.Count(wire.OpExec))
	}

	if _, err := admin.SwapSession(ctx, "ws1", "s1", "b", 0); err != nil {
		t.Fatal(err)
	}
	res, err := sess.Exec(ctx, client.ExecRequest{Argv: []string{"true"}})
	if err != nil || string(res.Stdout) != "ran\n" || served.Count(wire.OpExec) != 1 {
		t.Fatalf("exec through the session on a served agent: %v %+v", err, res)
	}
}

// countingBackend counts the calls that reach it.
type countingBackend struct {
	ag    subjects.Agent
	calls int
}

func (b *countingBackend) Agent() subjects.Agent { return b.ag }
func (b *countingBackend) Call(context.Context, string, any, any, rpc.CallOptions) error {
	b.calls++
	return nil
}
func (b *countingBackend) Ready(context.Context) error { return nil }

// Routing's backends check each call's agent, not only the one a session
// pointed at when the request came in: the pointer may move, or a pool
// claim another agent, before the call.
func TestServedOnlyChecksEveryCall(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	if _, err := adminClient(s).CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	ta := enrollAgent(t, s, "ws1", "skewed")
	serveMock(t, ta, agenttest.WithHello(wire.Hello{Protocol: wire.Version + 1}))
	waitFor(t, waitLong, "the skewed hello", func() bool {
		h := s.presence.Get(ta.ag).Hello
		return h != nil && h.Protocol == wire.Version+1
	})
	var be *countingBackend
	dial := servedOnly(func(ag subjects.Agent) routing.Backend { be = &countingBackend{ag: ag}; return be }, s)
	err := dial(ta.ag).Call(ctx, wire.OpExec, nil, nil, rpc.CallOptions{})
	var we *wire.Error
	if !errors.As(err, &we) || we.Reason != wire.ReasonAgentTooOld || be.calls != 0 {
		t.Fatalf("a call to an agent of an unserved protocol: %v, reached it %d times", err, be.calls)
	}
	served := subjects.Agent{Workspace: "ws1", ID: "never-heard"} // no hello: taken as current
	if err := dial(served).Call(ctx, wire.OpExec, nil, nil, rpc.CallOptions{}); err != nil || be.calls != 1 {
		t.Fatalf("a call to a served agent: %v, reached it %d times", err, be.calls)
	}
}
