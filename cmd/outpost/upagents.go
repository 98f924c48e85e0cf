//go:build !agent

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/agent/control"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
)

// upAgent is one agent `outpost up` runs in its own process: the local
// machine's, or a pool agent standing in for cloud compute.
type upAgent struct {
	id   string
	pool string // "" for the local machine
	root string // the directory it serves, made if missing
	// config is where its enrollment is kept between runs; the owner's
	// commands (outpost agent status|pause|resume|audit) take it as --config.
	config string
	// policy is the owner's policy file for it ("" for none).
	policy string
}

// prepare enrolls the agent (or reuses its enrollment from an earlier run
// while the control plane still knows it) and returns it ready to run,
// connecting to natsURLs: this run's embedded server, whose address may
// differ from the last run's. Like agent run, the agent gets the owner's
// controls beside its config file: the audit log (CONFIG.audit.jsonl), the
// control socket (CONFIG.sock) and, with ua.policy, the policy file,
// reloaded on SIGHUP or a change. The controls are the caller's to stop
// once the agent has stopped.
func (ua upAgent) prepare(ctx context.Context, cl *client.Client, natsURLs []string, logger *slog.Logger) (*agent.Agent, *ownerControls, error) {
	if err := os.MkdirAll(ua.root, 0o755); err != nil {
		return nil, nil, err
	}
	ident, err := ua.identity(ctx, cl)
	if err != nil {
		return nil, nil, fmt.Errorf("agent %s: %w", ua.id, err)
	}
	ident.URL, ident.NATSURLs = cl.BaseURL, natsURLs
	log := logger.With("agent", ua.id)
	oc, err := openOwnerControls(ua.config, ua.policy, log)
	if err != nil {
		return nil, nil, fmt.Errorf("agent %s: %w", ua.id, err)
	}
	a, err := agent.New(agent.Config{
		Identity: ident, Root: ua.root, Version: version, Logger: log, Journal: ua.config + ".writes",
		Policy: oc.policy, Audit: oc.audit, ControlSocket: control.SocketPath(ua.config),
	})
	if err != nil {
		oc.stop()
		return nil, nil, err
	}
	oc.watch()
	return a, oc, nil
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
	// controls are the agents' owner controls, stopped once all agents are.
	controls []*ownerControls
}

func newAgentGroup(ctx context.Context) *agentGroup {
	ctx, cancel := context.WithCancel(ctx)
	return &agentGroup{ctx: ctx, cancel: cancel, exited: make(chan error, 8)}
}

// run starts a, whose owner controls oc are stopped after it; at most
// cap(exited) agents.
func (g *agentGroup) run(a *agent.Agent, oc *ownerControls) {
	g.controls = append(g.controls, oc)
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
	for _, oc := range g.controls {
		oc.stop()
	}
	g.controls = nil
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
	fmt.Fprintf(w, "\nYou own this machine: see its agent's state and everything it did (agent pause|resume\nwith the same --config stops and restarts every call):\n\n")
	fmt.Fprintf(w, "  %s agent status --config %s\n", op, shellQuote(agents[0].config))
	fmt.Fprintf(w, "  %s agent audit --config %s\n", op, shellQuote(agents[0].config))
	fmt.Fprintf(w, "\nCtrl-C stops everything.\n")
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain
// path characters.
func shellQuote(s string) string {
	plain := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@,=", r))
	}) < 0
	if plain && s != "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
