package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// natsApart, when set (-nats-apart), runs the load suites' NATS as a
// nats-server process of its own, configured by `outpost nats-config` as an
// external cluster of one, and `outpost serve` on it with --nats-url: the
// agents' connections are then held by that process, not in serve's heap.
// Only with -transport plain (the printed config has no TLS).
var natsApart bool

// natsProc is a nats-server process the control plane connects to.
type natsProc struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

// startNATSApart builds nats-server (the version Outpost embeds), prepares
// stateDir for it with `outpost nats-config` and starts it on a free port.
func startNATSApart(ctx context.Context, bin, dir, stateDir string) (*natsProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ndir := filepath.Join(dir, "nats-apart")
	if err := os.MkdirAll(ndir, 0o700); err != nil {
		return nil, err
	}
	server := filepath.Join(filepath.Dir(bin), "nats-server")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", server, "github.com/nats-io/nats-server/v2")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build nats-server: %v\n%s", err, out)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	conf, err := exec.CommandContext(ctx, bin, "nats-config", "--state-dir", stateDir, "--listen", addr).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("outpost nats-config: %w\n%s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("outpost nats-config: %w", err)
	}
	confPath := filepath.Join(ndir, "nats.conf")
	if err := os.WriteFile(confPath, conf, 0o600); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "nats-server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	p := &natsProc{cmd: exec.Command(server, "-c", confPath), url: "nats://" + addr, done: make(chan struct{})}
	p.cmd.Dir = ndir // the config's store and resolver dirs are relative
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.Env = append(os.Environ(), serveEnv...) // the same runtime settings as serve's
	setParentDeath(p.cmd)
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.done) }()
	// serve gives up on a server that refuses its connection: wait until
	// this one accepts.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("nats-server exited; the end of its log:\n%s", logTail(logf.Name(), 2048))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("nats-server not listening on %s after 30 s; the end of its log:\n%s", addr, logTail(logf.Name(), 2048))
		}
	}
}

func (p *natsProc) stop() { stopChild(p.cmd.Process, p.done) }
