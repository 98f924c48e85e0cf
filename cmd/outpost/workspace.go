package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// `outpost workspace [show] | set`: the workspace's settings.

var workspaceCommands = []subcommand{
	{"show", "[--json]", "the workspace's settings", workspaceShow},
	{"set", "--agent-updates on|off [--json]", "change the workspace's settings", workspaceSet},
}

func runWorkspace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "workspace", workspaceCommands, "show", args, stdout, stderr)
}

func workspaceShow(fs *flag.FlagSet) subcommandRun {
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error {
		if err := wantArgs(args, 0, "no arguments (the workspace is --workspace)"); err != nil {
			return err
		}
		w, err := cl.GetWorkspace(ctx, ws)
		if err != nil {
			return err
		}
		return printWorkspace(stdout, w, *asJSON)
	}
}

func workspaceSet(fs *flag.FlagSet) subcommandRun {
	updates := fs.String("agent-updates", "", "on: the workspace's agents update themselves from the control plane's releases; off: they stay at their version")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error {
		if err := wantArgs(args, 0, "no arguments (the workspace is --workspace)"); err != nil {
			return err
		}
		var p client.WorkspacePatch
		switch *updates {
		case "on", "off":
			on := *updates == "on"
			p.AgentUpdates = &on
		case "":
			return fmt.Errorf("nothing to set: give --agent-updates on|off")
		default:
			return fmt.Errorf("--agent-updates %q: want on or off", *updates)
		}
		w, err := cl.PatchWorkspace(ctx, ws, p)
		if err != nil {
			return err
		}
		return printWorkspace(stdout, w, *asJSON)
	}
}

func printWorkspace(w io.Writer, ws *client.Workspace, asJSON bool) error {
	if asJSON {
		return printJSON(w, ws)
	}
	_, err := fmt.Fprintf(w, "workspace %s\ncreated:        %s\nagent updates:  %s\n",
		ws.ID, ws.CreatedAt.Local().Format(time.DateTime), onOff(ws.AgentUpdates))
	return err
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
