package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

func runAgents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("agents", "[--url URL] [--token TOKEN] [--workspace WS]", stderr)
	var cf clientFlags
	cf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	agents, err := cl.ListAgents(ctx, cf.workspace)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tPOOL\tHOST\tOS/ARCH\tLAST SEEN")
	for _, a := range agents {
		seen := "-"
		if !a.LastSeen.IsZero() {
			seen = time.Since(a.LastSeen).Round(time.Second).String() + " ago"
		}
		pool := a.Pool
		if pool == "" {
			pool = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s/%s\t%s\n", a.ID, a.Status, pool, a.Hostname, a.OS, a.Arch, seen)
	}
	return tw.Flush()
}
