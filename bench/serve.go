package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// benchAdminToken is the admin token of control planes the bench starts.
const benchAdminToken = "opadm_bench"

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// outpostBinary builds ./cmd/outpost once per run, into dir.
func outpostBinary(ctx context.Context, dir string) (string, error) {
	binOnce.Do(func() {
		binPath = filepath.Join(dir, "outpost")
		out, err := exec.CommandContext(ctx, "go", "build", "-o", binPath, "./cmd/outpost").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("build outpost (run the bench from the repo root): %v\n%s", err, out)
		}
	})
	return binPath, binErr
}

// serveProc is an `outpost serve` process: the control plane and its
// embedded NATS on their own, so their memory can be read apart from the
// agents the bench runs in its own process.
type serveProc struct {
	cmd      *exec.Cmd
	url      string
	natsURL  string
	stateDir string
	done     chan struct{}
}

func startServe(ctx context.Context, bin, dir string) (*serveProc, error) {
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	natsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &serveProc{
		url:      "http://127.0.0.1:" + strconv.Itoa(httpPort),
		natsURL:  "nats://127.0.0.1:" + strconv.Itoa(natsPort),
		stateDir: filepath.Join(dir, "serve-state"),
		done:     make(chan struct{}),
	}
	p.cmd = exec.Command(bin, "serve", "--listen", "127.0.0.1:"+strconv.Itoa(httpPort),
		"--nats-listen", "127.0.0.1:"+strconv.Itoa(natsPort), "--state-dir", p.stateDir)
	p.cmd.Env = append(os.Environ(), "OUTPOST_ADMIN_TOKEN="+benchAdminToken)
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("outpost serve exited; log in %s", logf.Name())
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("outpost serve not healthy after 30 s")
		}
	}
}

// stop asks for a clean shutdown, then kills.
func (p *serveProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// memory is the process's resident set now and at its peak, from
// /proc (Linux); zero elsewhere.
func (p *serveProc) memory() (rss, peak int64) {
	return procMemory(p.cmd.Process.Pid)
}

func procMemory(pid int) (rss, peak int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak
}

func mib(b int64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
