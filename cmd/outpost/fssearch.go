package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// runFsSearch is `outpost fs search [-e] [--glob G] [-n N] QUERY [PATH]`:
// grep-like lines PATH:LINE:COLUMN:TEXT.
func runFsSearch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs search", "[-e] [--glob GLOB] [-n MAX] [--json] QUERY [PATH]", stderr)
	tf := addTargetCommand(fs)
	re := fs.Bool("e", false, "QUERY is a regular expression (RE2), not a literal")
	glob := fs.String("glob", "", "only files matching GLOB (a base name, or a path with /)")
	max := fs.Int("n", 0, "stop after MAX matches (default the server's, 1000)")
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return fmt.Errorf("want QUERY and optionally PATH, got %d arguments", fs.NArg())
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	res, err := t.Search(ctx, client.SearchOptions{Path: fs.Arg(1), Query: fs.Arg(0), Regex: *re, Glob: *glob, MaxResults: *max})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, res)
	}
	for _, m := range res.Matches {
		if _, err := fmt.Fprintf(stdout, "%s:%d:%d:%s\n", m.Path, m.Line, m.Column, m.Text); err != nil {
			return err
		}
	}
	if res.Truncated {
		fmt.Fprintf(stderr, "outpost: stopped at %d matches (-n raises the limit)\n", len(res.Matches))
	}
	return nil
}

// runFsFind is `outpost fs find [-n N] GLOB [PATH]`: one path a line.
func runFsFind(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs find", "[-n MAX] [--json] GLOB [PATH]", stderr)
	tf := addTargetCommand(fs)
	max := fs.Int("n", 0, "stop after MAX entries (default the server's, 1000)")
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return fmt.Errorf("want GLOB and optionally PATH, got %d arguments", fs.NArg())
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	res, err := t.Find(ctx, fs.Arg(1), fs.Arg(0), *max)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, res)
	}
	for _, e := range res.Entries {
		if _, err := fmt.Fprintln(stdout, e.Path); err != nil {
			return err
		}
	}
	if res.Truncated {
		fmt.Fprintf(stderr, "outpost: stopped at %d entries (-n raises the limit)\n", len(res.Entries))
	}
	return nil
}

// runFsWatch is `outpost fs watch [-r] [--json] [PATH]`: one line per
// change ("create a/b.txt"), until interrupted. A dropped stream is
// resumed from the last event seen; "reset" says events were lost.
func runFsWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fs watch", "[-r] [--json] [PATH]", stderr)
	tf := addTargetCommand(fs)
	rec := fs.Bool("r", false, "subdirectories too")
	asJSON := jsonFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := atMost(fs, 1, "one PATH"); err != nil {
		return err
	}
	t, err := tf.target(ctx)
	if err != nil {
		return err
	}
	var last uint64
	print := func(e client.WatchEvent) error {
		if e.Seq > 0 {
			last = e.Seq
		}
		switch {
		case *asJSON && e.Reset:
			_, err = fmt.Fprintln(stdout, `{"reset":true}`)
		case *asJSON:
			_, err = fmt.Fprintf(stdout, "{\"seq\":%d,\"path\":%q,\"op\":%q}\n", e.Seq, e.Path, e.Op)
		case e.Reset:
			_, err = fmt.Fprintln(stdout, "reset (events were lost)")
		default:
			_, err = fmt.Fprintf(stdout, "%s %s\n", e.Op, e.Path)
		}
		return err
	}
	for {
		err := t.Watch(ctx, fs.Arg(0), *rec, last, print)
		if ctx.Err() != nil {
			return nil
		}
		if last == 0 || wire.AsError(err).Code != wire.CodeUnavailable && !isStreamEnd(err) {
			return err
		}
		fmt.Fprintf(stderr, "outpost: watch interrupted (%v); resuming\n", err)
	}
}

// isStreamEnd reports a stream that broke rather than an error answer.
func isStreamEnd(err error) bool {
	var we *wire.Error
	return err != nil && !errors.As(err, &we)
}
