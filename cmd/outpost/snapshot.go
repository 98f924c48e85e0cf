package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// `outpost snapshot ...`: a tree's content kept by the control plane.

var snapshotCommands = []subcommand{
	{"create", "[--agent A|--session S] [--path DIR] [--exclude GLOB]... [--gitignore] [--json]", "snapshot a directory of an agent or session (only new content is sent)", snapshotCreate},
	{"ls", "[--json]", "list the workspace's snapshots", snapshotList},
	{"rm", "ID...", "delete snapshots; content no other snapshot uses is freed", snapshotRemove},
	{"restore", "ID [--agent A|--session S] [--path DIR] [--delete] [--json]", "make a directory match a snapshot (only missing content is sent)", snapshotRestore},
}

func runSnapshot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "snapshot", snapshotCommands, "", args, stdout, stderr)
}

// globList is a repeatable string flag.
type globList []string

func (g *globList) String() string     { return strings.Join(*g, ",") }
func (g *globList) Set(v string) error { *g = append(*g, v); return nil }

func snapshotCreate(fs *flag.FlagSet) subcommandRun {
	tf := addTargetFlags(fs)
	var req client.CreateSnapshotRequest
	var ex globList
	fs.StringVar(&req.Path, "path", "", "the directory under the root (default the root)")
	fs.Var(&ex, "exclude", "leave out paths matching this glob (repeatable)")
	fs.BoolVar(&req.Gitignore, "gitignore", false, "leave out what .gitignore files exclude")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error {
		if err := wantArgs(args, 0, "no arguments"); err != nil {
			return err
		}
		t, err := tf.target(ctx, cl, ws)
		if err != nil {
			return err
		}
		req.Exclude = ex
		sn, err := t.CreateSnapshot(ctx, req)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, sn)
		}
		_, err = fmt.Fprintf(stdout, "snapshot %s of %s:%s: %d files, %s, %s new\n", sn.ID, sn.Source.Agent, sn.Source.Path, sn.Files, byteCount(sn.Bytes), byteCount(sn.NewBytes))
		return err
	}
}

func snapshotList(fs *flag.FlagSet) subcommandRun {
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error {
		if err := wantArgs(args, 0, "no arguments"); err != nil {
			return err
		}
		snaps, err := cl.ListSnapshots(ctx, ws)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, client.SnapshotList{Snapshots: snaps})
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tCREATED\tSOURCE\tFILES\tSIZE\tNEW\tSESSION")
		for _, s := range snaps {
			fmt.Fprintf(tw, "%s\t%s\t%s:%s\t%d\t%s\t%s\t%s\n", s.ID, s.CreatedAt.Local().Format(time.DateTime), s.Source.Agent, s.Source.Path,
				s.Files, byteCount(s.Bytes), byteCount(s.NewBytes), or(strings.TrimSpace(s.Session+" "+s.Kind), "-"))
		}
		return tw.Flush()
	}
}

func snapshotRemove(*flag.FlagSet) subcommandRun {
	return func(ctx context.Context, cl *client.Client, ws string, ids []string, stdout io.Writer) error {
		if err := wantSome(ids, "snapshot id"); err != nil {
			return err
		}
		for _, id := range ids {
			if err := cl.DeleteSnapshot(ctx, ws, id); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "snapshot %s deleted\n", id)
		}
		return nil
	}
}

func snapshotRestore(fs *flag.FlagSet) subcommandRun {
	tf := addTargetFlags(fs)
	var req client.RestoreSnapshotRequest
	fs.StringVar(&req.Path, "path", "", "the directory under the root to restore into (default the root)")
	fs.BoolVar(&req.Delete, "delete", false, "remove what the directory holds and the snapshot does not")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error {
		if err := wantArgs(args, 1, "a snapshot id"); err != nil {
			return err
		}
		t, err := tf.target(ctx, cl, ws)
		if err != nil {
			return err
		}
		res, err := t.RestoreSnapshot(ctx, args[0], req)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, res)
		}
		_, err = fmt.Fprintf(stdout, "restored %s: %d files, %s, %s sent\n", args[0], res.Files, byteCount(res.Bytes), byteCount(res.TransferredBytes))
		return err
	}
}

// byteCount renders n bytes for people: 512 B, 1.5 MiB.
func byteCount(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
