//go:build !agent

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
)

// upAgent is one agent `outpost up` runs in its own process: the local
// machine's, or a pool agent standing in for cloud compute.
type upAgent struct {
	id   string
	pool string // "" for the local machine
	root string // the directory it serves, made if missing
	// config is where its enrollment is kept between runs.
	config string
}

// prepare enrolls the agent (or reuses its enrollment from an earlier run
// while the control plane still knows it) and returns it ready to run,
// connecting to natsURLs: this run's embedded server, whose address may
// differ from the last run's.
func (ua upAgent) prepare(ctx context.Context, cl *client.Client, natsURLs []string, logger *slog.Logger) (*agent.Agent, error) {
	if err := os.MkdirAll(ua.root, 0o755); err != nil {
		return nil, err
	}
	ident, err := ua.identity(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", ua.id, err)
	}
	ident.URL, ident.NATSURLs = cl.BaseURL, natsURLs
	return agent.New(agent.Config{Identity: ident, Root: ua.root, Version: version, Logger: logger.With("agent", ua.id), Journal: ua.config + ".writes"})
}

// identity loads the agent's config, or enrolls it with a token that names
// the agent and its pool.
func (ua upAgent) identity(ctx context.Context, cl *client.Client) (*enroll.Config, error) {
	if cfg, err := enroll.LoadConfig(ua.config); err == nil {
		if a, err := cl.GetAgent(ctx, cfg.Workspace, cfg.Agent); err == nil && a.Pool == ua.pool {
			return cfg, nil
		}
	}
	pending, err := enroll.PrepareConfig(ua.config)
	if err != nil {
		return nil, err
	}
	defer pending.Discard()
	tok, err := cl.CreateEnrollmentToken(ctx, upWorkspace, client.EnrollmentTokenRequest{Agent: ua.id, Pool: ua.pool})
	if err != nil {
		return nil, fmt.Errorf("enrollment token: %w", err)
	}
	cfg, err := enroll.Enroll(ctx, cl.BaseURL, tok.Token, ua.id)
	if err != nil {
		return nil, err
	}
	return cfg, pending.Save(cfg)
}

// agentGroup runs agents until its context ends and waits for all of them.
type agentGroup struct {
	ctx    context.Context
	cancel context.CancelFunc
	n      int
	// exited receives the result of each agent's Run.
	exited chan error
	errs   []error
}

func newAgentGroup(ctx context.Context) *agentGroup {
	ctx, cancel := context.WithCancel(ctx)
	return &agentGroup{ctx: ctx, cancel: cancel, exited: make(chan error, 8)}
}

// run starts a; at most cap(exited) agents.
func (g *agentGroup) run(a *agent.Agent) {
	g.n++
	go func() { g.exited <- a.Run(g.ctx) }()
}

// wait stops the agents still running, waits for them, and returns their
// errors. It may be called again (it returns the same errors).
func (g *agentGroup) wait() error {
	g.cancel()
	for ; g.n > 0; g.n-- {
		if err := <-g.exited; err != nil && !errors.Is(err, context.Canceled) {
			g.errs = append(g.errs, err)
		}
	}
	return errors.Join(g.errs...)
}

// printWelcome tells a fresh user what runs and what to paste: every
// command works as printed, in order (test/e2e runs them).
func printWelcome(w io.Writer, url, token string, agents []upAgent, newSession bool) {
	fmt.Fprintf(w, "Outpost is up.\n\n  control plane  %s\n  web console    %s/ (sign in with the admin token)\n  admin token    %s\n", url, url, token)
	for _, ua := range agents {
		kind := "your machine"
		if ua.pool != "" {
			kind = "pool " + ua.pool
		}
		fmt.Fprintf(w, "  agent          %s (%s, workspace %s) serving %s\n", ua.id, kind, upWorkspace, ua.root)
	}
	const op = "go run ./cmd/outpost"
	fmt.Fprintf(w, "\nTry, in another terminal:\n\n  export OUTPOST_URL=%s OUTPOST_TOKEN=%s\n", url, token)
	fmt.Fprintf(w, "  %s agents\n", op)
	fmt.Fprintf(w, "  %s exec --agent %s -- uname -a\n", op, upAgentID)
	fmt.Fprintf(w, "  curl -s -H \"Authorization: Bearer $OUTPOST_TOKEN\" $OUTPOST_URL/v1/workspaces/%s/agents/%s/exec -d '{\"command\":\"ls -la\"}'\n", upWorkspace, upAgentID)
	fmt.Fprintf(w, "\nA session hot-swaps between your machine and the cloud pool:\n\n")
	if newSession {
		fmt.Fprintf(w, "  %s session create %s --agent laptop=%s --pool cloud=%s\n", op, upSession, upAgentID, upPool)
	}
	fmt.Fprintf(w, "  %s exec --session %s -- pwd\n", op, upSession)
	fmt.Fprintf(w, "  %s session swap %s cloud\n", op, upSession)
	fmt.Fprintf(w, "  %s exec --session %s -- pwd\n", op, upSession)
	fmt.Fprintf(w, "  curl -si -H \"Authorization: Bearer $OUTPOST_TOKEN\" $OUTPOST_URL/v1/workspaces/%s/sessions/%s/exec -d '{\"argv\":[\"pwd\"]}'\n", upWorkspace, upSession)
	fmt.Fprintf(w, "  %s session swap %s laptop\n", op, upSession)
	fmt.Fprintf(w, "  %s session show %s\n", op, upSession)
	fmt.Fprintf(w, "\nCtrl-C stops everything.\n")
}
