package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// portsSize is how many bytes the throughput row moves through one
// forwarded connection.
var portsSize = flag.Int64("ports-size", 1<<30, "bytes through one forwarded TCP connection in the ports suite (smaller for a quick run)")

// benchPorts: one TCP connection forwarded by `outpost port-forward`
// (the CLI as a process of its own, its stream through the control plane
// and the agent) next to `ssh -L` to the loopback sshd on a connection of
// its own, both to the same loopback service: throughput (a source that
// writes portsSize bytes) and the p50 of an HTTP GET of a small page over
// a kept-alive connection. And the same page through a preview link next
// to a direct GET.
func benchPorts(ctx context.Context, e *env) ([]row, error) {
	bin, err := outpostBinary(ctx)
	if err != nil {
		return nil, err
	}
	cfg, err := sshPeer(ctx)
	if err != nil {
		return nil, err
	}
	size := *portsSize
	src, stopSrc, err := serveSource(size)
	if err != nil {
		return nil, err
	}
	defer stopSrc()
	page := strings.Repeat("x", 1024)
	web, stopWeb, err := serveWeb(page)
	if err != nil {
		return nil, err
	}
	defer stopWeb()

	pfSrc, err := startPortForward(ctx, e, bin, src)
	if err != nil {
		return nil, err
	}
	defer pfSrc.stop()
	pfWeb, err := startPortForward(ctx, e, bin, web)
	if err != nil {
		return nil, err
	}
	defer pfWeb.stop()
	sshSrc, err := startSSHForward(ctx, cfg, src)
	if err != nil {
		return nil, err
	}
	defer sshSrc.stop()
	sshWeb, err := startSSHForward(ctx, cfg, web)
	if err != nil {
		return nil, err
	}
	defer sshWeb.stop()

	// Throughput: rounds interleaved, best of each.
	var op, ssh float64
	for range 3 {
		if v, err := drain(pfSrc.addr, size); err != nil {
			return nil, fmt.Errorf("port-forward: %w", err)
		} else {
			op = max(op, v)
		}
		if v, err := drain(sshSrc.addr, size); err != nil {
			return nil, fmt.Errorf("ssh -L: %w", err)
		} else {
			ssh = max(ssh, v)
		}
	}
	sizeName := fmt.Sprintf("%d MiB", size>>20)
	if size >= 1<<30 {
		sizeName = fmt.Sprintf("%d GiB", size>>30)
	}
	rows := []row{{Name: "port-forward: one TCP connection, " + sizeName + " (MB/s) vs ssh -L", Outpost: fmt.Sprintf("%.0f MB/s", op),
		Baseline: fmt.Sprintf("%.0f MB/s", ssh), Ratio: fmt.Sprintf("%.2fx", op/ssh), Goal: "≥ 1.0× ssh -L", Met: yesNo(op >= ssh)}}

	n := min(e.n, 300)
	get := func(hc *http.Client, url string) func() error {
		return func() error {
			resp, err := hc.Get(url)
			if err != nil {
				return err
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || len(b) != len(page) {
				return fmt.Errorf("GET %s: %d, %d bytes, %v", url, resp.StatusCode, len(b), err)
			}
			return nil
		}
	}
	keepAlive := func() *http.Client { return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}} }
	viaPF, err := measure(n, get(keepAlive(), "http://"+pfWeb.addr+"/"))
	if err != nil {
		return nil, err
	}
	viaSSH, err := measure(n, get(keepAlive(), "http://"+sshWeb.addr+"/"))
	if err != nil {
		return nil, err
	}
	rows = append(rows, row{Name: "port-forward: HTTP GET 1 KiB p50, kept-alive, vs ssh -L", Outpost: ms(viaPF.pct(50)), Baseline: ms(viaSSH.pct(50)),
		Ratio: ratio(viaPF.pct(50), viaSSH.pct(50)), Goal: "≤ ssh -L + 0.5 ms = " + ms(viaSSH.pct(50)+500*time.Microsecond),
		Met: yesNo(viaPF.pct(50) <= viaSSH.pct(50)+500*time.Microsecond)})

	link, err := e.cl.Agent(e.ws, e.id).CreateLink(ctx, web, client.CreateLinkRequest{})
	if err != nil {
		return nil, err
	}
	linkClient := keepAlive()
	if e.tls {
		if linkClient, err = e.httpClient(); err != nil {
			return nil, err
		}
	}
	viaLink, err := measure(n, get(linkClient, link.URL+"/"))
	if err != nil {
		return nil, err
	}
	direct, err := measure(n, get(keepAlive(), fmt.Sprintf("http://127.0.0.1:%d/", web)))
	if err != nil {
		return nil, err
	}
	rows = append(rows, row{Name: "preview link: HTTP GET 1 KiB p50, kept-alive, vs direct", Outpost: ms(viaLink.pct(50)), Baseline: ms(direct.pct(50)),
		Ratio: ratio(viaLink.pct(50), direct.pct(50)), Goal: "≤ direct + 1 ms = " + ms(direct.pct(50)+time.Millisecond),
		Met: yesNo(viaLink.pct(50) <= direct.pct(50)+time.Millisecond)})
	return rows, nil
}

// serveSource listens on loopback; each connection gets size bytes, then
// the end.
func serveSource(size int64) (int, func(), error) {
	buf := make([]byte, 256<<10)
	return serveTCP(func(c net.Conn) {
		for left := size; left > 0; {
			n, err := c.Write(buf[:min(left, int64(len(buf)))])
			if err != nil {
				return
			}
			left -= int64(n)
		}
	})
}

// serveWeb serves page on loopback.
func serveWeb(page string) (int, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, page) })}
	go srv.Serve(ln)
	return ln.Addr().(*net.TCPAddr).Port, func() { srv.Close() }, nil
}

// serveTCP serves each loopback connection with h until stop.
func serveTCP(h func(net.Conn)) (int, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); defer c.Close(); h(c) }()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, func() { ln.Close(); wg.Wait() }, nil
}

// drain reads a connection to addr to its end and returns MB/s.
func drain(addr string, want int64) (float64, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	n, err := io.CopyBuffer(io.Discard, c, make([]byte, 256<<10))
	if err != nil {
		return 0, err
	}
	if n != want {
		return 0, fmt.Errorf("read %d bytes of %d", n, want)
	}
	return float64(n) / time.Since(start).Seconds() / 1e6, nil
}

// forwarder is a running port forward: its local address.
type forwarder struct {
	addr   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process was waited for
}

func (f *forwarder) stop() {
	_ = f.cmd.Process.Kill()
	<-f.exited
}

var forwardingLine = regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+)`)

// startPortForward runs `outpost port-forward 0:port`.
func startPortForward(ctx context.Context, e *env, bin string, port int) (*forwarder, error) {
	cmd := exec.CommandContext(ctx, bin, "port-forward", "--agent", e.id, "0:"+strconv.Itoa(port))
	setParentDeath(cmd)
	cmd.Env = append(os.Environ(), "OUTPOST_URL="+e.srv.URL(), "OUTPOST_TOKEN="+e.srv.AdminToken(), "OUTPOST_WORKSPACE="+e.ws)
	if e.tls {
		cmd.Env = append(cmd.Env, "OUTPOST_CA_FILE="+e.srv.CAFile())
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	m := forwardingLine.FindStringSubmatch(line)
	if err != nil || m == nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("port-forward said %q, %v", line, err)
	}
	exited := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, out); _ = cmd.Wait(); close(exited) }()
	return &forwarder{addr: m[1], cmd: cmd, exited: exited}, nil
}

// startSSHForward runs `ssh -N -L` to the loopback sshd on a connection
// of its own, and waits until its local port accepts. A local port taken
// meanwhile by someone else is tried again with another.
func startSSHForward(ctx context.Context, cfg string, port int) (*forwarder, error) {
	var lastErr error
	for range 5 {
		f, err := trySSHForward(ctx, cfg, port)
		if err == nil {
			return f, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func trySSHForward(ctx context.Context, cfg string, port int) (*forwarder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	local := ln.Addr().String()
	ln.Close()
	cmd := exec.CommandContext(ctx, "ssh", "-F", cfg, "-o", "ControlMaster=no", "-o", "ControlPath=none",
		"-o", "ExitOnForwardFailure=yes", "-N", "-L", fmt.Sprintf("%s:127.0.0.1:%d", local, port), "peer")
	setParentDeath(cmd)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	f := &forwarder{addr: local, cmd: cmd, exited: exited}
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			return nil, errors.New("ssh -L exited")
		default:
		}
		c, err := net.Dial("tcp", local)
		if err == nil {
			c.Close()
			return f, nil
		}
		if time.Now().After(deadline) {
			f.stop()
			return nil, errors.New("ssh -L did not listen")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
