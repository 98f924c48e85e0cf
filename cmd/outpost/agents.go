package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// `outpost agents [ls]` lists the workspace's agents; `outpost agents rm`
// revokes them.
var agentsCommands = []subcommand{
	{"ls", "[--json]", "list the workspace's agents (the default)", agentsList},
	{"rm", "AGENT...", "revoke agents: their connections close, their credentials stop working", agentsRemove},
}

func runAgents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "agents", agentsCommands, "ls", args, stdout, stderr)
}

func agentsList(fs *flag.FlagSet) subcommandRun {
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error {
		if err := wantArgs(args, 0, "no arguments"); err != nil {
			return err
		}
		agents, err := cl.ListAgents(ctx, ws)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, client.AgentList{Agents: agents})
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATUS\tPOOL\tHOST\tOS/ARCH\tLAST SEEN")
		for _, a := range agents {
			seen := "-"
			if !a.LastSeen.IsZero() {
				seen = time.Since(a.LastSeen).Round(time.Second).String() + " ago"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s/%s\t%s\n", a.ID, a.Status, or(a.Pool, "-"), a.Hostname, a.OS, a.Arch, seen)
		}
		return tw.Flush()
	}
}

func agentsRemove(*flag.FlagSet) subcommandRun {
	return func(ctx context.Context, cl *client.Client, ws string, ids []string, stdout io.Writer) error {
		if err := wantSome(ids, "agent"); err != nil {
			return err
		}
		for _, id := range ids {
			if err := cl.RevokeAgent(ctx, ws, id); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "agent %s revoked\n", id)
		}
		return nil
	}
}
