package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/agent/update"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/proxy"
)

// releaseKey is the public key (base64 ed25519) that signs agent releases,
// set at build time: -ldflags "-X main.releaseKey=...". Without one the
// agent never updates itself.
var releaseKey = ""

// errUpdateReady stops the agent for a staged update.
var errUpdateReady = errors.New("a verified update is ready")

// updateFlags are agent run's self-update settings.
type updateFlags struct {
	off    bool
	every  time.Duration
	window time.Duration
}

// selfUpdate is one run's updater: it checks in the background and, with
// a release staged and the agent idle, stops the run for the handoff.
type selfUpdate struct {
	checker *update.Checker
	handoff *update.Handoff
	failed  string // the file naming a version that was rolled back
	staged  *update.Staged
	log     *slog.Logger
}

// newSelfUpdate is the updater of an agent run, nil when updates are off:
// --no-update, no release key built in, a build without a release version,
// or a trial run of a new binary.
func newSelfUpdate(f updateFlags, cfg *enroll.Config, config string, log *slog.Logger) (*selfUpdate, error) {
	if f.off || releaseKey == "" || !update.IsVersion(version) || update.TrialFromEnvSet() {
		return nil, nil
	}
	pub, err := update.ParsePublicKey(releaseKey)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return nil, fmt.Errorf("self-update: where is this binary: %w", err)
	}
	tc, err := cfg.TLSConfig()
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig, t.Proxy = tc, proxy.FromEnvironment
	u := &selfUpdate{failed: config + ".update-failed", log: log}
	u.checker = &update.Checker{
		BaseURL: strings.TrimRight(cfg.URL, "/"), Workspace: cfg.Workspace,
		HTTP: &http.Client{Transport: t, Timeout: 10 * time.Minute}, PublicKey: pub,
		Version: version, Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Every: f.every, Dir: filepath.Dir(exe), Skip: u.skip, Log: log,
	}
	u.handoff = &update.Handoff{Exe: exe, Args: os.Args[1:], Window: f.window, Dir: filepath.Dir(config), Output: os.Stderr, Log: log}
	return u, nil
}

// skip reports a version rolled back before.
func (u *selfUpdate) skip(v string) bool {
	b, err := os.ReadFile(u.failed)
	return err == nil && strings.TrimSpace(string(b)) == v
}

// watch checks for updates until ctx ends; with one staged and the agent
// idle, it stops the run (cancel with errUpdateReady).
func (u *selfUpdate) watch(ctx context.Context, a *agent.Agent, cancel context.CancelCauseFunc) {
	u.checker.Busy = a.Busy
	st, err := u.checker.Run(ctx)
	if err != nil {
		return
	}
	u.staged = st
	cancel(errUpdateReady)
}

// apply replaces the binary and tries the new one. On success it starts
// the new binary in this process's place and does not return (unix); on a
// rollback it records the version and returns, for the old binary to serve
// on.
func (u *selfUpdate) apply(ctx context.Context) error {
	err := u.handoff.Apply(ctx, u.staged)
	if err != nil {
		u.log.Error("self-update failed", "version", u.staged.Version, "err", err)
		_ = os.WriteFile(u.failed, []byte(u.staged.Version+"\n"), 0o600)
		return nil
	}
	u.log.Info("updated; restarting as the new version", "version", u.staged.Version)
	return restartSelf(u.handoff.Exe)
}
