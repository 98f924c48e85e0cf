package agenttest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// A program that calls agents tests itself against the mock: here it answers
// exec, then goes offline, and the caller sees 503 agent_offline at once.
func Example() {
	nc, stop := startNATS()
	defer stop()

	laptop := subjects.Agent{Workspace: "acme", ID: "laptop"}
	mock, _ := agenttest.New(nc, laptop)
	defer mock.Close()
	mock.Handle(wire.OpExec, func(req *wire.Request) (any, error) {
		var body wire.ExecRequest
		if err := req.DecodeBody(&body); err != nil {
			return nil, err
		}
		return &wire.ExecResult{Stdout: []byte("hello from " + body.Argv[0] + "\n")}, nil
	})

	tracker := presence.New(presence.Config{})
	defer tracker.Close()
	calls, _ := rpc.New(rpc.Config{Conn: nc, Presence: tracker})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	var res wire.ExecResult
	err := calls.Call(ctx, laptop, wire.OpExec, &wire.ExecRequest{Argv: []string{"echo"}}, &res, rpc.CallOptions{})
	fmt.Printf("%q %v\n", res.Stdout, err)

	_ = mock.SetOnline(false)
	err = calls.Call(ctx, laptop, wire.OpExec, &wire.ExecRequest{Argv: []string{"echo"}}, &res, rpc.CallOptions{})
	fmt.Println(wire.AsError(err).HTTPStatus(), wire.AsError(err).Reason)
	fmt.Println("exec requests seen:", mock.Count(wire.OpExec))
	// Output:
	// "hello from echo\n" <nil>
	// 503 agent_offline
	// exec requests seen: 1
}

// The mock can stand for a particular machine: its hellos and its answers
// to capabilities say what WithHello gives, the rest keeps the defaults.
func ExampleWithHello() {
	nc, stop := startNATS()
	defer stop()

	mac := subjects.Agent{Workspace: "acme", ID: "mac"}
	mock, _ := agenttest.New(nc, mac, agenttest.WithHello(wire.Hello{
		Version: "1.2.3", OS: "darwin", Arch: "arm64", Capabilities: map[string]bool{"pty": true},
	}))
	defer mock.Close()

	h := mock.Hello()
	fmt.Println(h.Agent, h.Version, h.OS, h.Arch, h.Hostname, h.Capabilities)
	// Output:
	// mac 1.2.3 darwin arm64 agenttest map[pty:true]
}

// startNATS runs an in-process NATS server and connects to it; stop ends
// both.
func startNATS() (nc *nats.Conn, stop func()) {
	ns, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	go ns.Start()
	ns.ReadyForConnections(5 * time.Second)
	nc, _ = nats.Connect(ns.ClientURL())
	return nc, func() { nc.Close(); ns.Shutdown() }
}
