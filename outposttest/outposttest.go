// Package outposttest runs a whole Outpost in-process for testing programs
// that use the SDK (controlplane/client): a real control plane with its
// embedded NATS server on loopback, and an online mock agent
// (agent/agenttest) enrolled in it as a real agent enrolls. The program
// under test talks HTTP to the control plane; the test says what the agent
// answers, per public operation (agenttest.Agent.HandleExec,
// HandleReadFile, On …).
//
//	env := outposttest.New(t, outposttest.Config{})
//	env.Agent.HandleExec(func(req *wire.ExecRequest) (*wire.ExecResult, error) {
//		return &wire.ExecResult{Stdout: []byte("hi\n")}, nil
//	})
//	res, err := env.Target.Exec(ctx, client.ExecRequest{Command: "echo hi"})
//
// It lives beside agenttest rather than in it because the control plane's
// own tests use agenttest.
package outposttest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/controlplane"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/wire"
)

// Config says what to bring up; every field has a default.
type Config struct {
	// Workspace is the mock agent's workspace and the client's default;
	// default "default".
	Workspace string
	// Agent is the mock agent's id; default "mock".
	Agent string
	// Hello is what the mock says of itself (agenttest.WithHello).
	Hello wire.Hello
	// Logger receives the control plane's logs; default none.
	Logger *slog.Logger
	// Heartbeat is the mock's heartbeat interval; default 1 s.
	Heartbeat time.Duration
}

// Env is a running Outpost with one mock agent.
type Env struct {
	// Server is the control plane (Server.URL, Server.AdminToken).
	Server *controlplane.Server
	// Client calls it with the admin token, Config.Workspace its default
	// workspace.
	Client *client.Client
	// Agent is the mock agent, online.
	Agent *agenttest.Agent
	// Target is the mock agent's target on Client.
	Target *client.Target

	nc     *nats.Conn
	dir    string
	agents []func() // stop the real agents RealAgent started
}

// Start brings up a control plane and the mock agent, and returns once the
// control plane sees the agent online. Close ends both.
func Start(ctx context.Context, cfg Config) (_ *Env, err error) {
	cfg.Workspace = cmp.Or(cfg.Workspace, client.DefaultWorkspace)
	cfg.Agent = cmp.Or(cfg.Agent, "mock")
	cfg.Heartbeat = cmp.Or(cfg.Heartbeat, time.Second)
	dir, err := os.MkdirTemp("", "outposttest-")
	if err != nil {
		return nil, err
	}
	e := &Env{dir: dir}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	e.Server, err = controlplane.New(controlplane.Config{
		Listen: "127.0.0.1:0", NATSListen: "127.0.0.1:0", StateDir: dir,
		Logger: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	if err := e.Server.Start(ctx); err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	e.Client = client.New(e.Server.URL(), e.Server.AdminToken(), client.WithWorkspace(cfg.Workspace))
	if err := e.startAgent(ctx, cfg); err != nil {
		return nil, err
	}
	e.Target = e.Client.Agent("", cfg.Agent)
	return e, e.waitOnline(ctx, cfg.Agent)
}

// enroll makes an identity for agent id in the client's default workspace,
// as `outpost agent enroll` does.
func (e *Env) enroll(ctx context.Context, id string) (*enroll.Config, error) {
	tok, err := e.Client.CreateEnrollmentToken(ctx, "", client.EnrollmentTokenRequest{Agent: id})
	if err != nil {
		return nil, fmt.Errorf("enrollment token: %w", err)
	}
	ident, err := enroll.Enroll(ctx, e.Server.URL(), tok.Token, id)
	if err != nil {
		return nil, fmt.Errorf("enroll %s: %w", id, err)
	}
	return ident, nil
}

// RealAgent enrolls agent id and runs the real agent daemon in-process on
// root (commands run, files are written, there; "" is a new directory
// removed by Close) until Close; it returns once the agent is online, with
// its target. For what a mock cannot show: streamed output of real
// processes, real files, real git.
func (e *Env) RealAgent(ctx context.Context, id, root string) (*client.Target, error) {
	if root == "" {
		var err error
		if root, err = os.MkdirTemp(e.dir, "root-"); err != nil {
			return nil, err
		}
	}
	ident, err := e.enroll(ctx, id)
	if err != nil {
		return nil, err
	}
	a, err := agent.New(agent.Config{Identity: ident, Root: root, HeartbeatInterval: time.Second})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Run(runCtx)
	}()
	e.agents = append(e.agents, func() { cancel(); <-done })
	return e.Client.Agent("", id), e.waitOnline(ctx, id)
}

// startAgent enrolls the mock as a real agent enrolls (a token, a key pair,
// credentials) and serves it on its own NATS connection.
func (e *Env) startAgent(ctx context.Context, cfg Config) error {
	if _, err := e.Client.CreateWorkspace(ctx, cfg.Workspace); err != nil && !errors.Is(err, wire.ErrConflict) {
		return fmt.Errorf("workspace: %w", err)
	}
	ident, err := e.enroll(ctx, cfg.Agent)
	if err != nil {
		return err
	}
	inbox, err := ident.AgentID().Inbox()
	if err != nil {
		return err
	}
	opts := append(ident.NATSOptions(), nats.CustomInboxPrefix(inbox))
	if e.nc, err = nats.Connect(ident.NATSServers(), opts...); err != nil {
		return fmt.Errorf("agent connection: %w", err)
	}
	if e.Agent, err = agenttest.New(e.nc, ident.AgentID(), agenttest.WithHello(cfg.Hello)); err != nil {
		return err
	}
	e.Agent.StartHeartbeats(cfg.Heartbeat)
	return nil
}

// waitOnline polls until the control plane reports agent online.
func (e *Env) waitOnline(ctx context.Context, agent string) error {
	for {
		a, err := e.Client.GetAgent(ctx, "", agent)
		if err == nil && a.Status == client.StatusOnline {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("agent %s not online: %w (last: %v)", agent, context.Cause(ctx), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close stops the agents and the control plane and removes the state.
func (e *Env) Close() {
	for _, stop := range e.agents {
		stop()
	}
	if e.Agent != nil {
		e.Agent.Close()
	}
	if e.nc != nil {
		e.nc.Close()
	}
	if e.Server != nil {
		_ = e.Server.Close()
	}
	_ = os.RemoveAll(e.dir)
}

// New is Start for a test: it fails t when the environment does not come
// up within 30 s, and closes it when the test ends.
func New(t testing.TB, cfg Config) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("outposttest: %v", err)
	}
	t.Cleanup(e.Close)
	return e
}
