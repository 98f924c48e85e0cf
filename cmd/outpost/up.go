package main

import (
	"context"
	"errors"
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
	"github.com/outposthq/outpost/wire"
)

// upAgentID is the id of the agent `outpost up` enrolls for the local machine.
const upAgentID = "local"

func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("up", "[--dir DIR] [--listen ADDR]", stderr)
	dir := fs.String("dir", ".", "directory the local agent serves")
	listen := fs.String("listen", "127.0.0.1:7070", "HTTP listen address")
	natsListen := fs.String("nats-listen", "127.0.0.1:4222", "embedded NATS listen address")
	stateDir := fs.String("state-dir", defaultStateDir(), "where the control plane and the local agent keep their state")
	verbose := fs.Bool("v", false, "log at debug level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return fmt.Errorf("--dir %s is not a directory", root)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	srv, err := controlplane.New(controlplane.Config{
		Listen:     *listen,
		StateDir:   filepath.Join(*stateDir, "controlplane"),
		NATSListen: *natsListen,
		AdminToken: os.Getenv("OUTPOST_ADMIN_TOKEN"),
		Logger:     logger,
	})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	defer srv.Close()

	cl := client.New(srv.URL(), srv.AdminToken())
	ident, err := upIdentity(ctx, cl, filepath.Join(*stateDir, "agent.json"))
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Config{Identity: ident, Root: root, Version: version, Logger: logger})
	if err != nil {
		return err
	}
	agentDone := make(chan error, 1)
	go func() { agentDone <- a.Run(ctx) }()

	if err := waitOnline(ctx, cl, "default", upAgentID); err != nil {
		return err
	}
	printWelcome(stdout, srv.URL(), srv.AdminToken(), root)
	select {
	case <-ctx.Done():
	case err := <-agentDone:
		return fmt.Errorf("local agent stopped: %w", err)
	}
	fmt.Fprintln(stderr, "shutting down")
	return <-agentDone
}

// upIdentity makes sure workspace default exists and the local agent is
// enrolled, reusing its config from an earlier run.
func upIdentity(ctx context.Context, cl *client.Client, configPath string) (*enroll.Config, error) {
	if _, err := cl.CreateWorkspace(ctx, "default"); err != nil && !errors.Is(err, wire.ErrConflict) {
		return nil, fmt.Errorf("create workspace default: %w", err)
	}
	if cfg, err := enroll.LoadConfig(configPath); err == nil {
		if _, err := cl.GetAgent(ctx, cfg.Workspace, cfg.Agent); err == nil {
			return cfg, nil
		}
	}
	tok, err := cl.CreateEnrollmentToken(ctx, "default", client.EnrollmentTokenRequest{Agent: upAgentID})
	if err != nil {
		return nil, fmt.Errorf("enrollment token: %w", err)
	}
	cfg, err := enroll.Enroll(ctx, cl.BaseURL, tok.Token, upAgentID)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(configPath), 0o700); err != nil {
		return nil, err
	}
	return cfg, cfg.Save(configPath)
}

func waitOnline(ctx context.Context, cl *client.Client, ws, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for {
		a, err := cl.GetAgent(ctx, ws, id)
		if err == nil && a.Status == "online" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("agent %s did not come online: %v", id, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func printWelcome(w io.Writer, url, token, root string) {
	fmt.Fprintf(w, `Outpost is up.

  control plane  %s
  admin token    %s
  agent          %s (workspace default) serving %s

Try, in another terminal:

  export OUTPOST_URL=%s OUTPOST_TOKEN=%s
  go run ./cmd/outpost agents
  go run ./cmd/outpost exec --agent %s -- uname -a
  curl -s -H "Authorization: Bearer $OUTPOST_TOKEN" $OUTPOST_URL/v1/workspaces/default/agents/%s/exec -d '{"command":"ls -la"}'

Ctrl-C stops everything.
`, url, token, upAgentID, root, url, token, upAgentID, upAgentID)
}

func defaultStateDir() string {
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "outpost", "up")
	}
	return filepath.Join(os.TempDir(), "outpost-up")
}
