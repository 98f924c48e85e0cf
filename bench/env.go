package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
)

// env is one control plane with one agent, all in this process, on loopback.
type env struct {
	n      int
	tls    bool // HTTPS, agents on wss:// through the API's port
	dir    string
	srv    *controlplane.Server
	cl     *client.Client
	ws, id string
	root   string
	// stateDir is the control plane's state directory when it is not
	// under dir (-cp-state-dir); Close removes it.
	stateDir string
	// storeDir is the control plane's JetStream store (under its state
	// directory, wherever that is).
	storeDir string
	cancel   context.CancelFunc
	agentCh  chan error
}

// cpStateDir (-cp-state-dir) is where the control plane's state directory
// (its JetStream store) is made: "" puts it in the bench's directory, on
// the agents' file system; "same" too (the flag's way to say so when the
// carry suite would pick storeDirDefault). Without the flag, main sets it
// to defaultStateDir; newEnv makes the directory.
var cpStateDir string

// storeApart says whether -cp-state-dir (after main's default) puts the
// control plane's state outside the bench's directory.
func storeApart() bool { return cpStateDir != "" && cpStateDir != "same" }

// storeDirDefault is where the carry suite puts the control plane's state
// unless -cp-state-dir says otherwise: a file system of its own, as the
// control plane's machine has. On one file system with the target, the
// restore's commit (a syncfs of the target's file system) also wrote the
// store's copy of the tree, and the store's writes took ext4's block
// allocation and writeback on the agents' disk (BENCHMARKS.md, "The first
// carry: the store on a file system of its own").
const storeDirDefault = "/dev/shm"

// cpDebugLog (-cp-log) writes the control plane's debug log to stderr
// (the carry's phases, among others) instead of discarding it.
var cpDebugLog bool

func newEnv(ctx context.Context, n int, tlsOn bool) (*env, error) {
	dir, err := os.MkdirTemp("", "outpost-bench")
	if err != nil {
		return nil, err
	}
	e := &env{n: n, tls: tlsOn, dir: dir, ws: "bench", id: "a1", root: filepath.Join(dir, "root")}
	if err := os.MkdirAll(e.root, 0o755); err != nil {
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if cpDebugLog {
		quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg := controlplane.Config{
		Listen: "127.0.0.1:0", NATSListen: "127.0.0.1:0",
		StateDir: filepath.Join(dir, "state"), Logger: quiet,
	}
	if storeApart() {
		sd, err := os.MkdirTemp(cpStateDir, "outpost-bench-state")
		if err != nil {
			return nil, fmt.Errorf("-cp-state-dir: %w", err)
		}
		e.stateDir, cfg.StateDir = sd, sd
	}
	e.storeDir = filepath.Join(cfg.StateDir, "jetstream")
	if tlsOn {
		cfg.TLSSelfSigned = []string{"127.0.0.1"}
	}
	e.srv, err = controlplane.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := e.srv.Start(ctx); err != nil {
		return nil, err
	}
	e.cl = client.New(e.srv.URL(), e.srv.AdminToken())
	if tlsOn {
		if e.cl.HTTP, err = e.httpClient(); err != nil {
			return nil, err
		}
	}
	if _, err := e.cl.CreateWorkspace(ctx, e.ws); err != nil {
		return nil, err
	}
	ident, err := e.enroll(ctx, client.EnrollmentTokenRequest{Agent: e.id})
	if err != nil {
		return nil, err
	}
	// A journal as every real agent has (the CLI's config + ".writes"):
	// its syncs are part of what writes cost.
	a, err := agent.New(agent.Config{Identity: ident, Root: e.root, Logger: quiet, Journal: filepath.Join(dir, "agent.writes")})
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithCancel(context.Background())
	e.cancel, e.agentCh = cancel, make(chan error, 1)
	go func() { e.agentCh <- a.Run(actx) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ag, err := e.cl.GetAgent(ctx, e.ws, e.id)
		if err == nil && ag.Status == "online" {
			return e, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("agent not online: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// enroll makes a token for req and enrolls with it, pinning the CA when the
// env serves TLS, as `outpost agent enroll` does.
func (e *env) enroll(ctx context.Context, req client.EnrollmentTokenRequest) (*enroll.Config, error) {
	tok, err := e.cl.CreateEnrollmentToken(ctx, e.ws, req)
	if err != nil {
		return nil, err
	}
	return enroll.Enroll(ctx, e.srv.URL(), tok.Token, "", enroll.WithCAPin(tok.CASHA256))
}

// httpClient trusts the env's CA, as OUTPOST_CA_FILE makes the CLI do.
func (e *env) httpClient() (*http.Client, error) { return client.TrustingCA(e.srv.CAFile()) }

// transport names the env's transport in row names.
func (e *env) transport() string {
	if e.tls {
		return " [TLS, wss]"
	}
	return ""
}

// Close stops the agent and the control plane and removes the temp dir.
func (e *env) Close() {
	if e.cancel != nil {
		e.cancel()
		<-e.agentCh
	}
	if e.srv != nil {
		e.srv.Close()
	}
	os.RemoveAll(e.dir)
	if e.stateDir != "" {
		os.RemoveAll(e.stateDir)
	}
}
