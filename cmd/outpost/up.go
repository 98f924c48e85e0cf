//go:build !agent

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

	"github.com/outposthq/outpost/controlplane"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// What `outpost up` makes: a workspace with the local machine's agent and a
// pool agent, and the name of the session its welcome suggests.
const (
	upWorkspace = "default"
	// upAgentID is the agent serving --dir, the user's own machine.
	upAgentID = "local"
	// upPoolAgentID is an agent of pool upPool serving its own directory
	// under the state dir: "cloud" compute a session can swap to at once.
	upPoolAgentID = "cloud-1"
	upPool        = "cloud"
	upSession     = "demo"
)

func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("up", "[--dir DIR] [--listen ADDR] [--nats-listen ADDR] [--state-dir DIR] [--policy FILE] [-v]", stderr)
	dir := fs.String("dir", ".", "directory the local agent serves")
	listen := fs.String("listen", "127.0.0.1:7070", "HTTP listen address (when the default is taken, a free port)")
	natsListen := fs.String("nats-listen", "127.0.0.1:4222", "embedded NATS listen address (when the default is taken, a free port)")
	stateDir := fs.String("state-dir", defaultStateDir(), "where the control plane and the agents keep their state (the pool agent serves its cloud/ directory)")
	policyFile := fs.String("policy", "", "the machine owner's policy file for the local agent (JSON; must not be writable by others); reloaded on SIGHUP or change")
	verbose := fs.Bool("v", false, "log at debug level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 0, "no arguments (the directory goes in --dir)"); err != nil {
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
	unlock, err := lockUpState(*stateDir)
	if err != nil {
		return err
	}
	defer unlock()
	set := setFlags(fs)
	if *listen, err = freeListen(*listen, "--listen", set["listen"], stderr); err != nil {
		return err
	}
	if *natsListen, err = freeListen(*natsListen, "--nats-listen", set["nats-listen"], stderr); err != nil {
		return err
	}

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
	if err := recordUpURL(*stateDir, srv.URL()); err != nil {
		return err
	}

	cl := client.New(srv.URL(), srv.AdminToken())
	if _, err := cl.CreateWorkspace(ctx, upWorkspace); err != nil && !errors.Is(err, wire.ErrConflict) {
		return fmt.Errorf("create workspace %s: %w", upWorkspace, err)
	}
	agents := []upAgent{
		{id: upAgentID, root: root, config: filepath.Join(*stateDir, "agent.json"), policy: *policyFile},
		{id: upPoolAgentID, pool: upPool, root: filepath.Join(*stateDir, upPool), config: filepath.Join(*stateDir, "cloud-agent.json")},
	}
	g := newAgentGroup(ctx)
	defer g.wait()
	for _, ua := range agents {
		a, oc, err := ua.prepare(ctx, cl, srv.NATSURLs(), logger)
		if err != nil {
			return err
		}
		g.run(a, oc)
	}
	for _, ua := range agents {
		if err := waitOnline(ctx, cl, upWorkspace, ua.id); err != nil {
			return err
		}
	}
	_, err = cl.GetSession(ctx, upWorkspace, upSession)
	printWelcome(stdout, srv.URL(), srv.AdminToken(), agents, err != nil)
	select {
	case <-ctx.Done():
	case err := <-g.exited:
		g.n-- // this one is done; wait for the others
		return errors.Join(fmt.Errorf("an agent stopped: %w", err), g.wait())
	}
	fmt.Fprintln(stderr, "shutting down")
	return g.wait()
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

func defaultStateDir() string {
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "outpost", "up")
	}
	return filepath.Join(os.TempDir(), "outpost-up")
}
