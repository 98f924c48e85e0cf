package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// Fixed waits: generous bounds for polling, never sleeps used as synchronisation.
const (
	startTimeout  = 20 * time.Second
	statusTimeout = 15 * time.Second
	pollEvery     = 20 * time.Millisecond
	quietPeriod   = 200 * time.Millisecond // how long "nothing arrives" is watched
)

// adminToken is the control plane's admin token (at least 32 characters).
const adminToken = "opk_e2e-admin-token-0123456789abcdef"

// proc is a running outpost process with its output captured.
type proc struct {
	t    testing.TB
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

type lockedWriter struct{ p *proc }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.out.Write(b)
}

// startProc starts the outpost binary with args; it is killed at cleanup.
func startProc(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	return startCommand(t, env, exec.Command(outpostBin, args...))
}

// startCommand starts cmd (the outpost binary, maybe wrapped, as in
// `ip netns exec NS outpost ...`) as startProc does.
func startCommand(t testing.TB, env []string, cmd *exec.Cmd) *proc {
	t.Helper()
	args := cmd.Args[1:]
	p := &proc{t: t, cmd: cmd, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = lockedWriter{p}, lockedWriter{p}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start outpost %v: %v", args, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("output of outpost %v:\n%s", args, p.output())
		}
	})
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop() {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.t.Fatalf("outpost did not stop on SIGTERM; output:\n%s", p.output())
	}
}

// kill sends SIGKILL to the process group and waits.
func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func (p *proc) signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

// privateDir is a new directory only its owner may enter, as a state dir
// must be (t.TempDir's let others in).
func privateDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func freePort(t testing.TB) int {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		// Each listener is closed before the next call, so two calls
		// could give the same port (seen: serve's API and NATS on one,
		// and serve failed to start): a port is given once per run.
		givenPorts.Lock()
		seen := givenPorts.m[port]
		givenPorts.m[port] = true
		givenPorts.Unlock()
		if !seen {
			return port
		}
	}
}

// givenPorts are the ports freePort has handed out in this test run.
var givenPorts = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// controlPlane is an `outpost serve` process with its ports and state dir.
type controlPlane struct {
	t                  testing.TB
	cfg                cpConfig
	url                string
	httpPort, natsPort int
	stateDir           string
	proc               *proc
	cl                 *client.Client
}

// cpConfig shapes a control plane beyond the defaults (everything on
// loopback).
type cpConfig struct {
	// natsHost is the address the embedded NATS listens on for agents
	// (127.0.0.1); the fault tests put it on a veth.
	natsHost string
	// natsPort is its port (0: a free one).
	natsPort int
	// httpPort is the API's port (0: a free one).
	httpPort int
	// publicURL, when set, is the URL users and agents are told to reach
	// the API at (a relay's, in front of it).
	publicURL string
	// agentURL, when set, is the NATS URL enrollment hands to agents (a
	// fault proxy's, in front of NATS) instead of NATS's own.
	agentURL string
	// tls serves the API with --tls-self-signed on natsHost (the address
	// agents reach) instead of plaintext on loopback: agents then connect
	// with wss:// through the API's port, and the embedded NATS stays on
	// loopback. As users deploy across networks.
	tls bool
	// releases, when set, is served with --agent-releases.
	releases string
}

func startControlPlane(t testing.TB) *controlPlane {
	t.Helper()
	return startControlPlaneWith(t, cpConfig{})
}

func startControlPlaneWith(t testing.TB, cfg cpConfig) *controlPlane {
	t.Helper()
	if cfg.natsHost == "" {
		cfg.natsHost = "127.0.0.1"
	}
	if cfg.natsPort == 0 {
		cfg.natsPort = freePort(t)
	}
	if cfg.httpPort == 0 {
		cfg.httpPort = freePort(t)
	}
	cp := &controlPlane{t: t, cfg: cfg, httpPort: cfg.httpPort, natsPort: cfg.natsPort, stateDir: privateDir(t)}
	cp.url = "http://" + cp.apiAddr()
	if cfg.tls {
		cp.url = "https://" + cp.apiAddr()
	}
	cp.cl = client.New(cp.url, adminToken)
	cp.start()
	return cp
}

// agentAddr is the host:port agents dial to reach NATS: native NATS, or
// the API's port with TLS (NATS over wss:// at /v1/nats).
func (cp *controlPlane) agentAddr() string {
	if cp.cfg.tls {
		return cp.apiAddr()
	}
	return net.JoinHostPort(cp.cfg.natsHost, strconv.Itoa(cp.natsPort))
}

// apiAddr is the host:port the API listens on: loopback, or with TLS the
// address agents reach.
func (cp *controlPlane) apiAddr() string {
	if cp.cfg.tls {
		return net.JoinHostPort(cp.cfg.natsHost, strconv.Itoa(cp.httpPort))
	}
	return "127.0.0.1:" + strconv.Itoa(cp.httpPort)
}

func (cp *controlPlane) start() {
	cp.t.Helper()
	args := []string{"serve", "--listen", cp.apiAddr(), "--state-dir", cp.stateDir}
	if cp.cfg.tls {
		args = append(args, "--nats-listen", "127.0.0.1:"+strconv.Itoa(cp.natsPort), "--tls-self-signed", cp.cfg.natsHost)
	} else {
		args = append(args, "--nats-listen", cp.agentAddr())
	}
	if cp.cfg.agentURL != "" {
		args = append(args, "--public-nats-url", cp.cfg.agentURL)
	}
	if cp.cfg.publicURL != "" {
		args = append(args, "--public-url", cp.cfg.publicURL)
	}
	if cp.cfg.releases != "" {
		args = append(args, "--agent-releases", cp.cfg.releases)
	}
	if cp.cfg.natsHost != "127.0.0.1" && !cp.cfg.tls {
		// A test network of namespaces this test made: plaintext on
		// purpose (the fault tests measure the link, not TLS).
		args = append(args, "--insecure-plaintext")
	}
	cp.proc = startProc(cp.t, []string{"OUTPOST_ADMIN_TOKEN=" + adminToken}, args...)
	if cp.cfg.tls {
		waitFor(cp.t, startTimeout, "the control plane's CA", func() error {
			hc, err := client.TrustingCA(cp.caFile())
			cp.cl.HTTP = hc
			return err
		})
	}
	waitHealthyWith(cp.t, cp.cl.HTTP, cp.proc, cp.url, startTimeout)
}

// caFile is the CA `serve --tls-self-signed` made, to trust.
func (cp *controlPlane) caFile() string { return filepath.Join(cp.stateDir, "tls", "ca.pem") }

// waitHealthy waits for the `outpost serve` process p to answer /healthz at
// url; it fails the test at once if p exits.
func waitHealthy(t testing.TB, p *proc, url string, timeout time.Duration) {
	t.Helper()
	waitHealthyWith(t, nil, p, url, timeout)
}

// waitHealthyWith is waitHealthy asking with hc (nil: the default client).
func waitHealthyWith(t testing.TB, hc *http.Client, p *proc, url string, timeout time.Duration) {
	t.Helper()
	if hc == nil {
		hc = http.DefaultClient
	}
	waitFor(t, timeout, "control plane healthy", func() error {
		select {
		case <-p.done:
			return errStop{fmt.Errorf("serve exited:\n%s", p.output())}
		default:
		}
		resp, err := hc.Get(url + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("healthz %d", resp.StatusCode)
		}
		return nil
	})
}

func (cp *controlPlane) restart() {
	cp.t.Helper()
	cp.proc.stop()
	cp.start()
}

// workspace creates a workspace and returns its id.
func (cp *controlPlane) workspace(id string) string {
	cp.t.Helper()
	if _, err := cp.cl.CreateWorkspace(ctx(cp.t), id); err != nil {
		cp.t.Fatalf("create workspace %s: %v", id, err)
	}
	return id
}

// enroll enrolls agent id in ws with `outpost agent enroll` and returns the
// config path.
func (cp *controlPlane) enroll(ws, id, pool string) string {
	cp.t.Helper()
	tok, err := cp.cl.CreateEnrollmentToken(ctx(cp.t), ws, client.EnrollmentTokenRequest{Agent: id, Pool: pool})
	if err != nil {
		cp.t.Fatalf("enrollment token: %v", err)
	}
	cfg := filepath.Join(cp.t.TempDir(), id+".json")
	args := []string{"agent", "enroll", "--url", cp.url, "--token", tok.Token, "--config", cfg}
	if tok.CASHA256 != "" {
		args = append(args, "--ca-sha256", tok.CASHA256)
	}
	out, err := exec.Command(outpostBin, args...).CombinedOutput()
	if err != nil {
		cp.t.Fatalf("outpost agent enroll: %v\n%s", err, out)
	}
	return cfg
}

// agentProc is an `outpost agent run` process.
type agentProc struct {
	*proc
	config, root string
}

func startAgent(t testing.TB, config, root string) *agentProc {
	t.Helper()
	return &agentProc{proc: startProc(t, nil, "agent", "run", "--config", config, "--root", root), config: config, root: root}
}

// waitStatus polls the agent's presence until it is want.
func (cp *controlPlane) waitStatus(ws, id, want string) {
	cp.t.Helper()
	waitFor(cp.t, statusTimeout, "agent "+id+" "+want, func() error {
		a, err := cp.cl.GetAgent(ctx(cp.t), ws, id)
		if err != nil {
			return err
		}
		if a.Status != want {
			return fmt.Errorf("status %s", a.Status)
		}
		return nil
	})
}

// errStop ends waitFor at once.
type errStop struct{ error }

// waitFor polls f until it returns nil, failing the test after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		var stop errStop
		if errors.As(err, &stop) || time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(pollEvery)
	}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}
