package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/term"

	"github.com/outposthq/outpost/agent/service"
	"github.com/outposthq/outpost/enroll"
)

// `outpost agent install|uninstall`: the agent as a per-user service.

// proxyEnv are the variables install carries into the service, as the
// installing shell had them: the agent reaches the control plane the same
// way.
var proxyEnv = []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"}

func runAgentInstall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("agent install", "--config FILE --root DIR [--policy FILE] [--no-update] [--update-check D] [--dry-run]", stderr)
	config := fs.String("config", "", "the agent config (default ~/.outpost/agent.json)")
	root := fs.String("root", "", "the directory the agent serves (required)")
	policy := fs.String("policy", "", "the owner's policy file, passed to 'agent run --policy'")
	noUpdate := fs.Bool("no-update", false, "pass --no-update to 'agent run': never update itself")
	updateCheck := fs.Duration("update-check", 0, "pass --update-check to 'agent run': how often to look for a newer release (default 1h)")
	dryRun := fs.Bool("dry-run", false, "print the service definition and where it would go; change nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 0, "no arguments"); err != nil {
		return err
	}
	if *root == "" {
		fs.Usage()
		return fmt.Errorf("--root is required")
	}
	if *updateCheck < 0 || (*noUpdate && *updateCheck != 0) {
		return fmt.Errorf("--update-check: a positive duration, without --no-update")
	}
	spec, err := serviceSpec(*config, *root, *policy, *noUpdate, *updateCheck)
	if err != nil {
		return err
	}
	if *dryRun {
		def, err := service.Definition(runtime.GOOS, spec)
		if err != nil {
			return err
		}
		if path, err := service.Path(spec); err == nil {
			fmt.Fprintf(stdout, "# %s\n", path)
		}
		_, err = io.WriteString(stdout, def)
		return err
	}
	if runtime.GOOS == "windows" {
		if spec.Password, err = servicePassword(spec.Account, stderr); err != nil {
			return err
		}
	}
	return service.Install(ctx, spec, stdout)
}

// serviceSpec is the service of the agent whose config is at config,
// serving root.
func serviceSpec(config, root, policy string, noUpdate bool, updateCheck time.Duration) (*service.Spec, error) {
	if config == "" {
		c, err := defaultAgentConfig()
		if err != nil {
			return nil, err
		}
		config = c
	}
	cfg, err := enroll.LoadConfig(config)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot tell where this program is: %w", err)
	}
	absConfig, err := filepath.Abs(config)
	if err != nil {
		return nil, err
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(absRoot); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--root %s: not a directory", root)
	}
	args := []string{"agent", "run", "--config", absConfig, "--root", absRoot}
	if policy != "" {
		abs, err := filepath.Abs(policy)
		if err != nil {
			return nil, err
		}
		args = append(args, "--policy", abs)
	}
	if noUpdate {
		args = append(args, "--no-update")
	}
	if updateCheck > 0 {
		args = append(args, "--update-check", updateCheck.String())
	}
	spec := &service.Spec{
		Name:        service.NameFor(cfg.Workspace, cfg.Agent),
		Description: fmt.Sprintf("Outpost agent %s/%s serving %s", cfg.Workspace, cfg.Agent, absRoot),
		Executable:  exe,
		Args:        args,
		Env:         map[string]string{},
	}
	for _, k := range proxyEnv {
		if v, ok := os.LookupEnv(k); ok {
			spec.Env[k] = v
		}
	}
	if home, err := os.UserHomeDir(); err == nil && runtime.GOOS == "darwin" {
		spec.LogDir = filepath.Join(home, "Library", "Logs", "outpost")
	}
	if u, err := user.Current(); err == nil && runtime.GOOS == "windows" {
		spec.Account = u.Username
	}
	return spec, nil
}

// servicePassword is the Windows account's password the service manager
// needs to run the service as that account: $OUTPOST_SERVICE_PASSWORD, or
// asked on the terminal without echo.
func servicePassword(account string, stderr io.Writer) (string, error) {
	if p, ok := os.LookupEnv("OUTPOST_SERVICE_PASSWORD"); ok {
		return p, nil
	}
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		return "", fmt.Errorf("the service runs as %s and Windows needs that account's password: set OUTPOST_SERVICE_PASSWORD or run on a terminal", account)
	}
	fmt.Fprintf(stderr, "password of %s (the service runs as this account): ", account)
	b, err := term.ReadPassword(int(os.Stdin.Fd()))
	fmt.Fprintln(stderr)
	return string(b), err
}

func runAgentUninstall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("agent uninstall", "[--config FILE]", stderr)
	config := fs.String("config", "", "the agent config whose service to remove (default ~/.outpost/agent.json)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 0, "no arguments"); err != nil {
		return err
	}
	if *config == "" {
		c, err := defaultAgentConfig()
		if err != nil {
			return err
		}
		*config = c
	}
	cfg, err := enroll.LoadConfig(*config)
	if err != nil {
		return err
	}
	return service.Uninstall(ctx, service.NameFor(cfg.Workspace, cfg.Agent), stdout)
}
