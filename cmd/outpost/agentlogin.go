package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
)

// `outpost agent login` (on the machine) and `outpost agent approve|deny`
// (by an admin or a workspace key): device login.

// defaultAgentConfig is where login writes the config when --config is not
// given, the path enrollCommand names too.
func defaultAgentConfig() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory for the default config (pass --config): %w", err)
	}
	return filepath.Join(home, ".outpost", "agent.json"), nil
}

func runAgentLogin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("agent login", "--url URL [--config FILE] [--root DIR] [--name NAME] [--ca-sha256 HEX]", stderr)
	url := fs.String("url", "", "control plane URL (default $OUTPOST_URL)")
	config := fs.String("config", "", "where to write the agent config (default ~/.outpost/agent.json; mode 0600)")
	root := fs.String("root", "", "the directory the agent will serve: printed in the install command to run next")
	name := fs.String("name", "", "agent name (default this machine's host name, made an id)")
	caSHA := fs.String("ca-sha256", "", "the control plane's CA fingerprint; without it a CA not publicly trusted is taken on first use and its fingerprint shown for the approver to compare")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 0, "no arguments"); err != nil {
		return err
	}
	*url = or(*url, envOr("OUTPOST_URL", ""))
	if *url == "" {
		fs.Usage()
		return fmt.Errorf("--url is required")
	}
	if *config == "" {
		c, err := defaultAgentConfig()
		if err != nil {
			return err
		}
		*config = c
	}
	if *name == "" {
		host, _ := os.Hostname()
		*name = hostID(host)
	}
	pending, err := enroll.PrepareConfig(*config)
	if err != nil {
		return fmt.Errorf("%w (nothing was sent)", err)
	}
	defer pending.Discard()
	cfg, err := enroll.DeviceLogin(ctx, *url, *name, func(p enroll.DeviceLoginPrompt) {
		printLoginPrompt(stdout, p)
	}, enroll.WithCAPin(*caSHA))
	if err != nil {
		return err
	}
	if err := pending.Save(cfg); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "approved: agent %s in workspace %s; config written to %s\n", cfg.Agent, cfg.Workspace, *config)
	r := *root
	if r == "" {
		r = "DIR"
	} else if abs, err := filepath.Abs(r); err == nil {
		r = abs
	}
	fmt.Fprintf(stdout, "run it as a service with: outpost agent install --config %s --root %s\n", shellArg(*config), shellArg(r))
	return nil
}

func printLoginPrompt(w io.Writer, p enroll.DeviceLoginPrompt) {
	c := p.Code
	fmt.Fprintf(w, "To add this machine, approve the code\n\n    %s\n\nat %s\nor with: outpost agent approve %s [--agent NAME | --pool POOL]\n",
		c.UserCode, c.VerificationURIComplete, c.UserCode)
	switch {
	case p.CASHA256 != "" && p.Trusted:
		fmt.Fprintf(w, "The control plane's CA matched --ca-sha256 %s.\n", p.CASHA256)
	case p.CASHA256 != "":
		fmt.Fprintf(w, "The control plane's CA has the fingerprint (sha256)\n    %s\nThe approver sees it too: approve only if they match.\n", p.CASHA256)
	}
	fmt.Fprintf(w, "Waiting for approval (the code expires in %s)...\n", time.Duration(c.ExpiresIn)*time.Second)
}

// hostID makes a host name an agent id: lower case, the domain dropped,
// anything else than [a-z0-9_-] a dash. Empty when nothing is left.
func hostID(host string) string {
	host, _, _ = strings.Cut(strings.ToLower(host), ".")
	b := []byte(host)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	id := strings.TrimLeft(string(b), "-_")
	if len(id) > subjects.MaxIDLen {
		id = id[:subjects.MaxIDLen]
	}
	if subjects.ValidateID(id) != nil {
		return ""
	}
	return id
}

// shellArg quotes s for a POSIX shell when it needs it.
func shellArg(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@%+=,~") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var deviceCommands = []subcommand{
	{"approve", "CODE [--agent NAME | --pool POOL] [--yes] [--json]", "approve a device login: shows the machine that asked, then enrolls it", deviceApprove},
	{"deny", "CODE [--json]", "deny a device login", deviceDeny},
}

func deviceApprove(fs *flag.FlagSet) subcommandRun {
	var req client.DeviceApprovalRequest
	fs.StringVar(&req.Agent, "agent", "", "the agent id it enrolls as (an enrolled one gets this machine's key); default the machine's name")
	fs.StringVar(&req.Pool, "pool", "", "the pool it enrolls into")
	yes := fs.Bool("yes", false, "do not ask for confirmation on a terminal")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error {
		if err := wantArgs(args, 1, "the user code"); err != nil {
			return err
		}
		req.UserCode = args[0]
		pending, err := cl.DeviceApproval(ctx, ws, req.UserCode)
		if err != nil {
			return err
		}
		if !*asJSON {
			describeDeviceLogin(stdout, pending)
		}
		if !*yes && term.IsTerminal(int(os.Stdin.Fd())) {
			fmt.Fprintf(stdout, "Approve it into workspace %s? [y/N] ", ws)
			line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
				return fmt.Errorf("not approved")
			}
		}
		out, err := cl.DecideDeviceLogin(ctx, ws, req)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, out)
		}
		_, err = fmt.Fprintf(stdout, "approved: it enrolls as agent %s of workspace %s%s\n", out.Agent, out.Workspace, poolNote(out.Pool))
		return err
	}
}

func poolNote(pool string) string {
	if pool == "" {
		return ""
	}
	return " in pool " + pool
}

func deviceDeny(fs *flag.FlagSet) subcommandRun {
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, cl *client.Client, ws string, args []string, stdout io.Writer) error {
		if err := wantArgs(args, 1, "the user code"); err != nil {
			return err
		}
		out, err := cl.DecideDeviceLogin(ctx, ws, client.DeviceApprovalRequest{UserCode: args[0], Deny: true})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, out)
		}
		_, err = fmt.Fprintf(stdout, "denied the device login %s from %s (%s/%s)\n", out.UserCode, or(out.Hostname, "an unnamed host"), out.OS, out.Arch)
		return err
	}
}

// describeDeviceLogin says what a person is about to approve.
func describeDeviceLogin(w io.Writer, d *client.DeviceApproval) {
	fmt.Fprintf(w, "device login %s\n  host:     %s\n  system:   %s/%s\n  name:     %s\n  from:     %s\n  asked:    %s (expires in %s)\n",
		d.UserCode, or(d.Hostname, "(not given)"), or(d.OS, "?"), or(d.Arch, "?"), or(d.Name, "(none)"), or(d.RemoteAddr, "?"),
		d.CreatedAt.Local().Format(time.DateTime), time.Until(d.ExpiresAt).Round(time.Second))
	if d.CASHA256 != "" {
		fmt.Fprintf(w, "  CA:       %s (the machine printed this fingerprint too: it must match)\n", d.CASHA256)
	}
}
