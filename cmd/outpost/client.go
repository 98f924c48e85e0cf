package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/outposthq/outpost/controlplane/client"
)

// defaultURL is the control plane a client command talks to when nothing
// names one: `outpost up`'s.
const defaultURL = "http://127.0.0.1:7070"

// clientFlags are the flags every client command shares. Each is resolved
// after parsing, so that --help and usage errors never print a value from
// the environment or a context (a token least of all): the flag, else the
// environment (OUTPOST_URL, OUTPOST_TOKEN, OUTPOST_WORKSPACE), else the
// context (see contexts.go), else the default.
type clientFlags struct {
	url, token, workspace, context string
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "control plane URL (default $OUTPOST_URL, else the context's, else "+defaultURL+")")
	fs.StringVar(&c.token, "token", "", "admin token or workspace key (default $OUTPOST_TOKEN, else the context's)")
	fs.StringVar(&c.workspace, "workspace", "", "workspace (default $OUTPOST_WORKSPACE, else the context's, else default)")
	fs.StringVar(&c.context, "context", "", "saved context to use (default $OUTPOST_CONTEXT, else the current one; see 'outpost login')")
}

// client resolves the flags (c.workspace among them) and makes the client.
//
// A context applies when named (--context, OUTPOST_CONTEXT), or, as the
// current one, when neither a URL nor a token came from a flag or the
// environment. A context's token and CA file go only to its own URL: with
// --url naming another, they are not used.
func (c *clientFlags) client() (*client.Client, error) {
	url, token := or(c.url, envOr("OUTPOST_URL", "")), or(c.token, envOr("OUTPOST_TOKEN", ""))
	ws, ca := or(c.workspace, envOr("OUTPOST_WORKSPACE", "")), envOr("OUTPOST_CA_FILE", "")
	name := or(c.context, envOr("OUTPOST_CONTEXT", ""))
	if name != "" || url == "" && token == "" {
		st, _, err := loadContexts()
		if errors.Is(err, errNoConfigDir) && name == "" {
			st, err = &contextStore{}, nil // no contexts: the token is missing
		}
		if err != nil {
			return nil, err
		}
		saved, err := st.pick(name)
		if err != nil {
			return nil, err
		}
		if saved != nil {
			url = or(url, saved.URL)
			if url == saved.URL {
				token, ca = or(token, saved.Token), or(ca, saved.CAFile)
			}
			ws = or(ws, saved.Workspace)
		}
	}
	c.url, c.token, c.workspace = or(url, defaultURL), token, or(ws, "default")
	if c.token == "" {
		return nil, fmt.Errorf("no token: run 'outpost login --url URL', set OUTPOST_TOKEN or pass --token")
	}
	return newClient(c.url, c.token, ca)
}

// newClient makes a client of url with token, trusting the CA in caFile
// when one is named: the SDK's client.Config, so the CLI and programs
// configure a client the same way.
func newClient(url, token, caFile string) (*client.Client, error) {
	cl, err := client.Config{URL: url, Token: token, CAFile: caFile}.New()
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return cl, nil
}

// pickAgent returns the agent to use when none was named: the workspace's
// only agent that is not in a pool. Otherwise it says which there are and
// how to name one.
func pickAgent(ctx context.Context, cl *client.Client, ws string) (string, error) {
	agents, err := cl.ListAgents(ctx, ws)
	if err != nil {
		return "", err
	}
	var own []string
	var described, pooled []string
	for _, a := range agents {
		if a.Pool == "" {
			own = append(own, a.ID)
			described = append(described, a.ID+" ("+a.Status+")")
		} else {
			pooled = append(pooled, a.ID+" (pool "+a.Pool+", "+a.Status+")")
		}
	}
	switch {
	case len(own) == 1:
		return own[0], nil
	case len(own) == 0 && len(pooled) == 0:
		return "", fmt.Errorf("workspace %s has no agents: enroll one ('outpost token create' prints the command)", ws)
	case len(own) == 0:
		return "", fmt.Errorf("workspace %s has no agent outside pools, only %s: name one with --agent (or OUTPOST_AGENT), or use a session (--session)", ws, strings.Join(pooled, ", "))
	}
	return "", fmt.Errorf("workspace %s has %d agents: %s; name one with --agent (or OUTPOST_AGENT)", ws, len(own), strings.Join(described, ", "))
}
