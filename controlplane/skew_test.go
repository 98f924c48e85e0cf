package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
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
