package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/outposthq/outpost/controlplane/client"
)

// targetFlags are --agent and --session, the flags of every client command
// that runs on a target (exec, fs, git, processes). A command adds them with
// one line and resolves them with another:
//
//	tf := addTargetFlags(fs)
//	...
//	target, err := tf.target(ctx, cl, cf.workspace)
//
// and then calls the operation on target: with --session its path prefix is
// /v1/workspaces/{ws}/sessions/{s} (routed to the session's active backend),
// otherwise /v1/workspaces/{ws}/agents/{agent}.
type targetFlags struct {
	agent, session string
}

// addTargetFlags registers --agent and --session on fs.
func addTargetFlags(fs *flag.FlagSet) *targetFlags {
	tf := &targetFlags{}
	fs.StringVar(&tf.agent, "agent", "", "agent to run on ($OUTPOST_AGENT; default the workspace's only agent outside pools)")
	fs.StringVar(&tf.session, "session", "", "session to run in, routed to its active backend ($OUTPOST_SESSION)")
	return tf
}

// target resolves the flags to the target of a call. The flags win over
// the environment; --agent and --session exclude each other; with neither,
// $OUTPOST_SESSION, then $OUTPOST_AGENT, then the workspace's only agent
// outside pools.
func (tf *targetFlags) target(ctx context.Context, cl *client.Client, ws string) (*client.Target, error) {
	agent, session := tf.agent, tf.session
	switch {
	case agent != "" && session != "":
		return nil, fmt.Errorf("--agent and --session exclude each other")
	case agent == "" && session == "":
		session = envOr("OUTPOST_SESSION", "")
		if session == "" {
			agent = envOr("OUTPOST_AGENT", "")
		}
	}
	if session != "" {
		return cl.Session(ws, session), nil
	}
	if agent == "" {
		var err error
		if agent, err = pickAgent(ctx, cl, ws); err != nil {
			return nil, err
		}
	}
	return cl.Agent(ws, agent), nil
}

// targetCommand is the flags of a command that needs only its target: the
// client's flags and the target's.
type targetCommand struct {
	cf clientFlags
	tf *targetFlags
}

// addTargetCommand registers the client and target flags on fs.
func addTargetCommand(fs *flag.FlagSet) *targetCommand {
	c := &targetCommand{tf: addTargetFlags(fs)}
	c.cf.register(fs)
	return c
}

// target makes the client and resolves the target of a call.
func (c *targetCommand) target(ctx context.Context) (*client.Target, error) {
	cl, err := c.cf.client()
	if err != nil {
		return nil, err
	}
	return c.tf.target(ctx, cl, c.cf.workspace)
}
