package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/outposthq/outpost/controlplane/client"
)

// targetFlags pick where a client command runs: an agent or a session.
type targetFlags struct {
	clientFlags
	agent, session string
}

func (f *targetFlags) register(fs *flag.FlagSet) {
	f.clientFlags.register(fs)
	fs.StringVar(&f.agent, "agent", envOr("OUTPOST_AGENT", ""), "agent ($OUTPOST_AGENT; default the workspace's only agent)")
	fs.StringVar(&f.session, "session", "", "session (routed to its active backend)")
}

// target resolves the flags to a target of a new client.
func (f *targetFlags) target(ctx context.Context) (*client.Target, error) {
	cl, err := f.client()
	if err != nil {
		return nil, err
	}
	switch {
	case f.session != "" && f.agent != "":
		return nil, fmt.Errorf("--agent and --session exclude each other")
	case f.session != "":
		return cl.Session(f.workspace, f.session), nil
	case f.agent == "":
		if f.agent, err = pickAgent(ctx, cl, f.workspace); err != nil {
			return nil, err
		}
	}
	return cl.Agent(f.workspace, f.agent), nil
}
