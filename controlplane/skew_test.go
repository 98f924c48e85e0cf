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
