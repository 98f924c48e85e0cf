package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/enroll"
)

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: outpost agent enroll|run|status|pause|resume|audit [flags]")
		return fmt.Errorf("missing subcommand")
	}
	switch args[0] {
	case "enroll":
		return runAgentEnroll(ctx, args[1:], stdout, stderr)
	case "run":
		return runAgentRun(ctx, args[1:], stdout, stderr)
	case "status", "pause", "resume", "audit":
		return runAgentControl(ctx, args[0], args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, "usage: outpost agent enroll|run [flags]\n\ncommands:\n  enroll  make a key pair, enroll with a token, write the config\n  run     serve a directory until SIGINT/SIGTERM\n  status  the running daemon's state (through its control socket)\n  pause   make every call answer agent_paused until resume\n  resume  end a pause\n  audit   print the audit log (-f follows it)")
		return nil
	}
	return fmt.Errorf("unknown subcommand %q (want enroll or run)", args[0])
}

func runAgentEnroll(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("agent enroll", "--url URL --token TOKEN --config FILE [--name NAME] [--ca-sha256 HEX]", stderr)
	url := fs.String("url", "", "control plane URL (default $OUTPOST_URL)")
	token := fs.String("token", "", "enrollment token (single use)")
	config := fs.String("config", "", "where to write the agent config (mode 0600; missing directories are made 0700)")
	name := fs.String("name", "", "agent name (used as its id when the token names none)")
	caSHA := fs.String("ca-sha256", "", "the control plane's CA fingerprint (from the token's enrollCommand): checked before the token is sent, then the only CA trusted")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 0, "no arguments"); err != nil {
		return err
	}
	*url = or(*url, envOr("OUTPOST_URL", ""))
	if *url == "" || *token == "" || *config == "" {
		fs.Usage()
		return fmt.Errorf("--url, --token and --config are required")
	}
	// The token is single use: make sure the config can be written before
	// sending it.
	pending, err := enroll.PrepareConfig(*config)
	if err != nil {
		return fmt.Errorf("%w (nothing was sent; the token is still unused)", err)
	}
	defer pending.Discard()
	cfg, err := enroll.Enroll(ctx, *url, *token, *name, enroll.WithCAPin(*caSHA))
	if err != nil {
		return fmt.Errorf("enroll: %w", err)
	}
	if err := pending.Save(cfg); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "enrolled agent %s in workspace %s; config written to %s\nrun it with: outpost agent run --config %s --root DIR\n",
		cfg.Agent, cfg.Workspace, *config, *config)
	return nil
}

func runAgentRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("agent run", "--config FILE --root DIR [--policy FILE] [--takeover]", stderr)
	config := fs.String("config", "", "agent config written by 'outpost agent enroll'")
	root := fs.String("root", ".", "directory the agent serves")
	policyFile := fs.String("policy", "", "the machine owner's policy file (JSON; must not be writable by others); reloaded on SIGHUP or change")
	takeover := fs.Bool("takeover", false, "make a daemon already serving this identity stop, and serve instead")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 0, "no arguments (the directory goes in --root)"); err != nil {
		return err
	}
	if *config == "" {
		fs.Usage()
		return fmt.Errorf("--config is required")
	}
	cfg, err := enroll.LoadConfig(*config)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	oc, err := openOwnerControls(*config, *policyFile, log)
	if err != nil {
		return err
	}
	defer oc.stop()
	a, err := agent.New(agent.Config{
		Identity: cfg,
		Root:     abs,
		Version:  version,
		Logger:   log,
		Takeover: *takeover,
		LockFile: *config + ".lock",
		Journal:  *config + ".writes",
		Policy:   oc.policy,
		Audit:    oc.audit,
	})
	if err != nil {
		return err
	}
	if err := oc.start(*config, a, *takeover, log); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "agent %s/%s serving %s\n", cfg.Workspace, cfg.Agent, abs)
	return a.Run(ctx)
}
