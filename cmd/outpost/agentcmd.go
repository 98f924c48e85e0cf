package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/agent/control"
	"github.com/outposthq/outpost/agent/service"
	"github.com/outposthq/outpost/agent/update"
	"github.com/outposthq/outpost/enroll"
)

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, agentUsage)
		return fmt.Errorf("missing subcommand")
	}
	switch args[0] {
	case "enroll":
		return runAgentEnroll(ctx, args[1:], stdout, stderr)
	case "run":
		return runAgentRun(ctx, args[1:], stdout, stderr)
	case "login":
		return runAgentLogin(ctx, args[1:], stdout, stderr)
	case "install":
		return runAgentInstall(ctx, args[1:], stdout, stderr)
	case "uninstall":
		return runAgentUninstall(ctx, args[1:], stdout, stderr)
	case "approve", "deny":
		return runGroup(ctx, "agent", deviceCommands, "", args, stdout, stderr)
	case "status", "pause", "resume", "audit":
		return runAgentControl(ctx, args[0], args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, agentUsage)
		return nil
	}
	return fmt.Errorf("unknown subcommand %q (want enroll, login, approve, deny, run, install, uninstall, status, pause, resume or audit)", args[0])
}

const agentUsage = `usage: outpost agent <command> [flags]

commands:
  enroll     make a key pair, enroll with a token, write the config
  login      make a key pair, enroll by device login (a code someone approves), write the config
  approve    approve a device login (admin or workspace key)
  deny       deny a device login
  run        serve a directory until SIGINT/SIGTERM
  install    run the agent as a per-user service (systemd user unit, LaunchAgent, Windows service)
  uninstall  stop and remove that service
  status     the running daemon's state (through its control socket)
  pause      make every call answer agent_paused until resume
  resume     end a pause
  audit      print the audit log (-f follows it)`

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
	fs := newFlags("agent run", "--config FILE --root DIR [--policy FILE] [--takeover] [--no-update]", stderr)
	config := fs.String("config", "", "agent config written by 'outpost agent enroll'")
	root := fs.String("root", ".", "directory the agent serves")
	policyFile := fs.String("policy", "", "the machine owner's policy file (JSON; must not be writable by others); reloaded on SIGHUP or change")
	takeover := fs.Bool("takeover", false, "make a daemon already serving this identity stop, and serve instead")
	var uf updateFlags
	fs.BoolVar(&uf.off, "no-update", false, "never update this agent from the control plane's releases")
	fs.DurationVar(&uf.every, "update-check", update.DefaultCheckEvery, "how often to look for a newer release")
	fs.DurationVar(&uf.window, "update-window", update.DefaultHealthWindow, "how long a new version may take to come online before it is rolled back")
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
	run := func(ctx context.Context) error {
		for {
			up, err := serveOnce(ctx, cfg, abs, *config, *policyFile, *takeover, uf, log, stdout)
			if up == nil {
				return err
			}
			// A verified update is ready and the agent has stopped: try it.
			// On success this process becomes the new version; a rollback
			// returns, and the old version serves on.
			if err := up.apply(ctx); err != nil {
				return err
			}
		}
	}
	if handled, err := service.RunAsService(run); handled {
		return err
	}
	return run(ctx)
}

// serveOnce runs the agent, with the owner's controls (policy, audit log,
// control socket), until it stops. It returns the updater when it stopped
// for a staged update, everything of this run (socket, lock) released.
func serveOnce(ctx context.Context, cfg *enroll.Config, root, config, policyFile string, takeover bool, uf updateFlags, log *slog.Logger, stdout io.Writer) (*selfUpdate, error) {
	trial := update.TrialFromEnv()
	oc, err := openOwnerControls(config, policyFile, log)
	if err != nil {
		return nil, err
	}
	defer oc.stop()
	runCtx, cancel := context.WithCancelCause(ctx)
	var helpers sync.WaitGroup // end with runCtx
	defer helpers.Wait()
	defer cancel(nil)
	ac := agent.Config{
		Identity: cfg,
		Root:     root,
		Version:  version,
		Logger:   log,
		Takeover: takeover,
		LockFile: config + ".lock",
		Journal:  config + ".writes",
		Policy:   oc.policy,
		Audit:    oc.audit,

		ControlSocket: control.SocketPath(config),
	}
	if trial != nil {
		// A new version on trial: report when it serves, stop when told.
		ac.OnServing = func() {
			if err := trial.Online(); err != nil {
				log.Error("update trial", "err", err)
			}
		}
		helpers.Go(func() { trial.WaitStop(runCtx); cancel(nil) })
	}
	a, err := agent.New(ac)
	if err != nil {
		return nil, err
	}
	oc.watch()
	var up *selfUpdate
	if trial == nil { // a trial never updates itself: it is the update
		if up, err = newSelfUpdate(uf, cfg, config, log); err != nil {
			return nil, err
		}
	}
	if up != nil {
		helpers.Go(func() { up.watch(runCtx, a, cancel) })
	}
	fmt.Fprintf(stdout, "agent %s/%s %s serving %s\n", cfg.Workspace, cfg.Agent, version, root)
	err = a.Run(runCtx)
	if context.Cause(runCtx) != errUpdateReady || ctx.Err() != nil {
		return nil, err
	}
	return up, nil
}
