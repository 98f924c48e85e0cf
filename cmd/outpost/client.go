package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/outposthq/outpost/controlplane/client"
)

// clientFlags are the flags every client command shares; they default to
// OUTPOST_URL, OUTPOST_TOKEN and OUTPOST_WORKSPACE.
type clientFlags struct {
	url, token, workspace string
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", envOr("OUTPOST_URL", "http://127.0.0.1:7070"), "control plane URL ($OUTPOST_URL)")
	// The token's default is read after parsing, so that --help never
	// prints it.
	fs.StringVar(&c.token, "token", "", "admin token or workspace key (default $OUTPOST_TOKEN)")
	fs.StringVar(&c.workspace, "workspace", envOr("OUTPOST_WORKSPACE", "default"), "workspace ($OUTPOST_WORKSPACE)")
}

func (c *clientFlags) client() (*client.Client, error) {
	if c.token == "" {
		c.token = envOr("OUTPOST_TOKEN", "")
	}
	if c.token == "" {
		return nil, fmt.Errorf("no token: set OUTPOST_TOKEN or pass --token")
	}
	cl := client.New(c.url, c.token)
	if ca := envOr("OUTPOST_CA_FILE", ""); ca != "" {
		hc, err := client.TrustingCA(ca)
		if err != nil {
			return nil, fmt.Errorf("OUTPOST_CA_FILE: %w", err)
		}
		cl.HTTP = hc
	}
	return cl, nil
}

// pickAgent returns the agent to use when none was named: the workspace's only
// agent that is not in a pool.
func pickAgent(ctx context.Context, cl *client.Client, ws string) (string, error) {
	agents, err := cl.ListAgents(ctx, ws)
	if err != nil {
		return "", err
	}
	var own []string
	for _, a := range agents {
		if a.Pool == "" {
			own = append(own, a.ID)
		}
	}
	if len(own) != 1 {
		return "", fmt.Errorf("workspace %s has %d agents of its own: name one with --agent or OUTPOST_AGENT", ws, len(own))
	}
	return own[0], nil
}
