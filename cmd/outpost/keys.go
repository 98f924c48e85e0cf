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

// `outpost token ...`: enrollment tokens; `outpost key ...`: workspace keys.
// A secret is printed once, by the command that makes it; listings show ids.

var tokenCommands = []subcommand{
	{"create", "[--agent AGENT] [--pool POOL] [--ttl DURATION] [--json]", "make a single-use enrollment token", tokenCreate},
	{"ls", "[--json]", "list the enrollment tokens that can still enroll", tokenList},
	{"rm", "ID...", "delete enrollment tokens: they no longer enroll", tokenRemove},
}

var keyCommands = []subcommand{
	{"create", "[--json]", "make a workspace key (admin)", keyCreate},
	{"ls", "[--json]", "list the workspace's keys (admin)", keyList},
	{"rm", "ID...", "delete workspace keys: they stop working at once (admin)", keyRemove},
}

func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "token", tokenCommands, "", args, stdout, stderr)
}

func runKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "key", keyCommands, "", args, stdout, stderr)
}

func tokenCreate(fs *flag.FlagSet) subcommandRun {
	var req client.EnrollmentTokenRequest
	fs.StringVar(&req.Agent, "agent", "", "the agent id it enrolls (an enrolled one gets new credentials)")
	fs.StringVar(&req.Pool, "pool", "", "the pool it enrolls into")
	ttl := fs.Duration("ttl", 0, "how long it stays valid, at most 720h (default 15m)")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error {
		if err := wantArgs(args, 0, "no arguments"); err != nil {
			return err
		}
		if *ttl < 0 || *ttl%time.Second != 0 {
			return fmt.Errorf("--ttl %s: want whole seconds, e.g. 1h", *ttl)
		}
		req.TTLSeconds = int64(*ttl / time.Second)
		tok, err := cl.CreateEnrollmentToken(ctx, ws, req)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, tok)
		}
		fmt.Fprintf(stdout, "enrollment token %s of workspace %s, single use, expires %s (in %s):\n%s\n",
			tok.ID, ws, tok.ExpiresAt.Local().Format(time.DateTime), time.Until(tok.ExpiresAt).Round(time.Second), tok.Token)
		_, err = fmt.Fprintf(stdout, "on the machine, run:\n%s\n", tok.EnrollCommand)
		return err
	}
}

func tokenList(fs *flag.FlagSet) subcommandRun {
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error {
		if err := wantArgs(args, 0, "no arguments"); err != nil {
			return err
		}
		toks, err := cl.ListEnrollmentTokens(ctx, ws)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, client.EnrollmentTokenList{Tokens: toks})
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tAGENT\tPOOL\tEXPIRES")
		for _, t := range toks {
			fmt.Fprintf(tw, "%s\t%s\t%s\tin %s\n", t.ID, or(t.Agent, "-"), or(t.Pool, "-"), time.Until(t.ExpiresAt).Round(time.Second))
		}
		return tw.Flush()
	}
}

func tokenRemove(*flag.FlagSet) subcommandRun {
	return func(ctx context.Context, cl *client.Client, ws string, ids []string, stdout io.Writer) error {
		if err := wantSome(ids, "enrollment token id"); err != nil {
			return err
		}
		for _, id := range ids {
			if err := cl.DeleteEnrollmentToken(ctx, ws, id); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "enrollment token %s deleted\n", id)
		}
		return nil
	}
}

func keyCreate(fs *flag.FlagSet) subcommandRun {
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error {
		if err := wantArgs(args, 0, "no arguments"); err != nil {
			return err
		}
		key, err := cl.CreateKeyWithID(ctx, ws)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, key)
		}
		_, err = fmt.Fprintf(stdout, "workspace key %s of workspace %s (shown only now; use it as OUTPOST_TOKEN):\n%s\n", key.ID, ws, key.Token)
		return err
	}
}

func keyList(fs *flag.FlagSet) subcommandRun {
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error {
		if err := wantArgs(args, 0, "no arguments"); err != nil {
			return err
		}
		keys, err := cl.ListKeys(ctx, ws)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, client.KeyList{Keys: keys})
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tCREATED\tLAST USED")
		for _, k := range keys {
			used := "never"
			if !k.LastUsed.IsZero() {
				used = time.Since(k.LastUsed).Round(time.Second).String() + " ago"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", k.ID, k.CreatedAt.Local().Format(time.DateTime), used)
		}
		return tw.Flush()
	}
}

func keyRemove(*flag.FlagSet) subcommandRun {
	return func(ctx context.Context, cl *client.Client, ws string, ids []string, stdout io.Writer) error {
		if err := wantSome(ids, "key id"); err != nil {
			return err
		}
		for _, id := range ids {
			if err := cl.DeleteKey(ctx, ws, id); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "workspace key %s deleted\n", id)
		}
		return nil
	}
}
