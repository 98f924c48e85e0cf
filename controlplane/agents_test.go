package controlplane

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

func TestAgentPresence(t *testing.T) {
	cfg := testConfig(t)
	s := startServer(t, cfg)
	ctx := context.Background()
	admin := adminClient(s)
	if _, err := admin.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	status := func(id string) string {
		a, err := admin.GetAgent(ctx, "ws1", id)
		if err != nil {
			return "error: " + err.Error()
		}
		return a.Status
	}

	t.Run("online reconnecting offline", func(t *testing.T) {
		ta := enrollAgent(t, s, "ws1", "p1")
		if got := status("p1"); got != client.StatusOffline {
			t.Fatalf("before connecting: %s", got)
		}
		m, nc := serveMock(t, ta, agenttest.WithHello(mockHello))
		waitFor(t, waitLong, "online", func() bool { return status("p1") == client.StatusOnline })

		a, err := admin.GetAgent(ctx, "ws1", "p1")
		if err != nil {
			t.Fatal(err)
		}
		if a.Version != "test-1.0" || a.OS != "linux" || a.Arch != "arm64" || a.Hostname != "fakehost" ||
			!a.Capabilities["pty"] || a.Capabilities["git"] || time.Since(a.LastSeen) > 5*time.Second {
			t.Fatalf("agent from hello: %+v", a)
		}
		list, err := admin.ListAgents(ctx, "ws1")
		if err != nil || len(list) != 1 || list[0].ID != "p1" || list[0].Status != client.StatusOnline {
			t.Fatalf("list: %+v %v", list, err)
		}

		m.StopHeartbeats()
		waitFor(t, waitLong, "reconnecting", func() bool { return status("p1") == client.StatusReconnecting })
		stopMock(m, nc)
		waitFor(t, waitShort, "offline after goodbye", func() bool { return status("p1") == client.StatusOffline })
	})

	t.Run("a dropped connection is reconnecting at once", func(t *testing.T) {
		// The agent says which connection it is on and heartbeats once a
		// minute (a 3 min lease): only the server's disconnect event can
		// make it reconnecting within waitShort.
		ta := enrollAgent(t, s, "ws1", "p4")
		nc, err := ta.connect()
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		cid, err := nc.GetClientID()
		if err != nil {
			t.Fatal(err)
		}
		h := mockHello
		h.HeartbeatMs = 60_000
		h.Conn = &wire.ConnRef{Server: nc.ConnectedServerId(), ID: cid}
		m, err := agenttest.New(nc, ta.ag, agenttest.WithHello(h))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		waitFor(t, waitLong, "online", func() bool { return status("p4") == client.StatusOnline })
		nc.Close() // no goodbye: as when the agent's process is killed
		waitFor(t, waitShort, "reconnecting", func() bool { return status("p4") == client.StatusReconnecting })
		waitFor(t, waitLong, "offline after the window", func() bool { return status("p4") == client.StatusOffline })
	})

	t.Run("silent agent goes offline after the window", func(t *testing.T) {
		ta := enrollAgent(t, s, "ws1", "p2")
		m, _ := serveMock(t, ta)
		waitFor(t, waitLong, "online", func() bool { return status("p2") == client.StatusOnline })
		m.StopHeartbeats()
		waitFor(t, waitLong, "offline", func() bool { return status("p2") == client.StatusOffline })
	})

	t.Run("revoke", func(t *testing.T) {
		ta := enrollAgent(t, s, "ws1", "p3")
		m, conn := serveMock(t, ta)
		m.Handle(wire.OpExec, func(*wire.Request) (any, error) { return &wire.ExecResult{}, nil })
		closed := make(chan struct{})
		conn.SetClosedHandler(func(*nats.Conn) { close(closed) })
		waitFor(t, waitLong, "online", func() bool { return status("p3") == client.StatusOnline })

		start := time.Now()
		if err := admin.RevokeAgent(ctx, "ws1", "p3"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-closed:
		case <-time.After(2*time.Second - time.Since(start)):
			t.Fatal("revoked agent's connection still open after 2 s")
		}
		if nc, err := ta.connect(); err == nil {
			nc.Close()
			t.Fatal("revoked credentials accepted")
		}
		if _, err := admin.GetAgent(ctx, "ws1", "p3"); !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("GET revoked: %v, want not_found", err)
		}
		if _, err := admin.Agent("ws1", "p3").Exec(ctx, client.ExecRequest{Argv: []string{"true"}}); !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("exec on revoked: %v, want not_found", err)
		}
		if err := admin.RevokeAgent(ctx, "ws1", "p3"); !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("second revoke: %v, want not_found", err)
		}
		list, err := admin.ListAgents(ctx, "ws1")
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range list {
			if a.ID == "p3" {
				t.Fatal("revoked agent listed")
			}
		}
		// A new enrollment of the id brings it back with new credentials.
		again := enrollAgent(t, s, "ws1", "p3")
		nc, err := again.connect()
		if err != nil {
			t.Fatalf("re-enrolled after revoke: %v", err)
		}
		nc.Close()
	})
}
