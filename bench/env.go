package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
)

// env is one control plane with one agent, all in this process, on loopback.
type env struct {
	n       int
	dir     string
	srv     *controlplane.Server
	cl      *client.Client
	ws, id  string
	root    string
	cancel  context.CancelFunc
	agentCh chan error
}

func newEnv(ctx context.Context, n int) (*env, error) {
	dir, err := os.MkdirTemp("", "outpost-bench")
	if err != nil {
		return nil, err
	}
	e := &env{n: n, dir: dir, ws: "bench", id: "a1", root: filepath.Join(dir, "root")}
	if err := os.MkdirAll(e.root, 0o755); err != nil {
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.srv, err = controlplane.New(controlplane.Config{
		Listen: "127.0.0.1:0", NATSListen: "127.0.0.1:0",
		StateDir: filepath.Join(dir, "state"), Logger: quiet,
	})
	if err != nil {
		return nil, err
	}
	if err := e.srv.Start(ctx); err != nil {
		return nil, err
	}
	e.cl = client.New(e.srv.URL(), e.srv.AdminToken())
	if _, err := e.cl.CreateWorkspace(ctx, e.ws); err != nil {
		return nil, err
	}
	tok, err := e.cl.CreateEnrollmentToken(ctx, e.ws, client.EnrollmentTokenRequest{Agent: e.id})
	if err != nil {
		return nil, err
	}
	ident, err := enroll.Enroll(ctx, e.srv.URL(), tok.Token, "")
	if err != nil {
		return nil, err
	}
	a, err := agent.New(agent.Config{Identity: ident, Root: e.root, Logger: quiet})
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithCancel(context.Background())
	e.cancel, e.agentCh = cancel, make(chan error, 1)
	go func() { e.agentCh <- a.Run(actx) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ag, err := e.cl.GetAgent(ctx, e.ws, e.id)
		if err == nil && ag.Status == "online" {
			return e, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("agent not online: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close stops the agent and the control plane and removes the temp dir.
func (e *env) Close() {
	if e.cancel != nil {
		e.cancel()
		<-e.agentCh
	}
	if e.srv != nil {
		e.srv.Close()
	}
	os.RemoveAll(e.dir)
}
