package rpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/internal/natstest"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// BenchmarkCall is one call at a time to an agent that answers at once
// with a hello (capabilities: half the load tool's calls), the agent on
// a connection of its own. allocs/op and B/op are the control plane's
// call path (rpc.Call: the request, its reply subject, the presence
// watch, the reply's decoding) with the agent's side and the NATS
// server's, which a change to rpc does not move.
func BenchmarkCall(b *testing.B) {
	ns := natstest.Start(b)
	nc, agentNC := natstest.Connect(b, ns), natstest.Connect(b, ns)
	pr := presence.New(presence.Config{MinLease: time.Minute})
	b.Cleanup(pr.Close)
	hb, _ := wire.Marshal(&wire.Heartbeat{Instance: "i1", IntervalMs: 20000})
	if err := pr.Observe(ag, "heartbeat", hb); err != nil {
		b.Fatal(err)
	}
	c, err := rpc.New(rpc.Config{Conn: nc, Presence: pr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	hello := wire.Hello{Version: "v1", OS: "linux", Arch: "amd64", Hostname: "box", Protocol: wire.Version,
		Capabilities: map[string]bool{"pty": true, "git": true}}
	subj, _ := ag.RPC()
	sub, err := agentNC.Subscribe(subj, func(m *nats.Msg) {
		req, err := wire.DecodeRequest(m.Data)
		if err != nil {
			_ = m.Respond(wire.EncodeError("", err))
			return
		}
		res, _ := wire.EncodeResult(req.ID, &hello)
		_ = m.Respond(res)
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	_ = agentNC.Flush()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		var h wire.Hello
		if err := c.Call(ctx, ag, wire.OpCapabilities, nil, &h, rpc.CallOptions{Timeout: 10 * time.Second}); err != nil || h.Hostname != "box" {
			b.Fatalf("call: %v (%+v)", err, h)
		}
	}
}
