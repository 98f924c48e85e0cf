package main

import (
	"context"
	"fmt"
	"io"

	"github.com/outposthq/outpost/controlplane/client"
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
