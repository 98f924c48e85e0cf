package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/outposthq/outpost/internal/hoptrace"
)

// echoCommand runs on the remote PTY: raw mode, no terminal echo, so each
// byte typed comes back from the program, as a shell's line editor echoes.
const echoCommand = "stty raw -echo; echo ready; exec cat"

// benchEcho: keystroke echo latency over a remote terminal, `outpost exec
// -tt` (the attach WebSocket: CLI → control plane → the attach stream's
// bulk connection, NATS when the agent cannot make one → agent → PTY and
// back) next to `ssh -tt` to the loopback sshd on a direct connection (no
// ControlMaster hop). Both are client processes with piped stdin and
// stdout; one byte is typed, then its echo awaited. Both run at once and
// the keystrokes alternate between them, so that a shared machine's load,
// which comes and goes, weighs on both alike.
func benchEcho(ctx context.Context, e *env) ([]row, error) {
	bin, err := outpostBinary(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		// Built in an earlier transport's env, now removed: build again.
		bin = filepath.Join(e.dir, "outpost")
		build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/outpost")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build outpost: %v\n%s", err, out)
		}
	}
	n := max(e.n, 100)
	envv := append(os.Environ(), "OUTPOST_URL="+e.srv.URL(), "OUTPOST_TOKEN="+e.srv.AdminToken(), "OUTPOST_WORKSPACE="+e.ws)
	if e.tls {
		envv = append(envv, "OUTPOST_CA_FILE="+e.srv.CAFile())
	}
	cmd := exec.CommandContext(ctx, bin, "exec", "-tt", "--agent", e.id, "--", "sh", "-c", echoCommand)
	cmd.Env = envv
	op, err := startEcho(cmd, true)
	if err != nil {
		return nil, fmt.Errorf("outpost exec -tt: %w", err)
	}
	defer op.stop()
	names := [2]string{"keystroke echo p50, `outpost exec -tt` vs `ssh -tt`", "keystroke echo p99, `outpost exec -tt` vs `ssh -tt`"}
	cfg, sshErr := sshPeer(ctx)
	if sshErr != nil {
		lat, err := echoLatencies(n, op)
		if err != nil {
			return nil, fmt.Errorf("outpost exec -tt: %w", err)
		}
		hoptrace.Report(os.Stderr)
		return []row{
			{Name: names[0], Outpost: ms(lat[0].pct(50)), Baseline: "skipped: " + sshErr.Error(), Ratio: "—"},
			{Name: names[1], Outpost: ms(lat[0].pct(99)), Baseline: "skipped", Ratio: "—"},
		}, nil
	}
	ssh, err := startEcho(exec.CommandContext(ctx, "ssh", "-F", cfg, "-o", "ControlMaster=no", "-o", "ControlPath=none",
		"-tt", "peer", echoCommand), false)
	if err != nil {
		return nil, fmt.Errorf("ssh -tt: %w", err)
	}
	defer ssh.stop()
	lat, err := echoLatencies(n, op, ssh)
	if err != nil {
		return nil, err
	}
	hoptrace.Report(os.Stderr)
	var rows []row
	for i, p := range []float64{50, 99} {
		a, b := lat[0].pct(p), lat[1].pct(p)
		rows = append(rows, row{Name: names[i], Outpost: ms(a), Baseline: ms(b), Ratio: ratio(a, b), Goal: "≤ 1x", Met: yesNo(a <= b)})
	}
	return rows, nil
}

// echoClient is a started client process whose echo is timed.
type echoClient struct {
	what  string // for errors
	cmd   *exec.Cmd
	stdin io.WriteCloser
	r     *bufio.Reader
	i     int
	trace bool // mark the hops Typed and Echoed (a hoptrace build)
}

// startEcho starts cmd and waits for its "ready".
func startEcho(cmd *exec.Cmd, trace bool) (*echoClient, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &echoClient{what: filepath.Base(cmd.Path), cmd: cmd, stdin: stdin, r: bufio.NewReader(stdout), trace: trace}
	ready := make(chan error, 1)
	go func() {
		for {
			line, err := c.r.ReadString('\n')
			if err != nil {
				ready <- fmt.Errorf("before ready: %w", err)
				return
			}
			if strings.Contains(line, "ready") {
				ready <- nil
				return
			}
		}
	}()
	select {
	case err = <-ready:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("no ready line in 30 s")
	}
	if err != nil {
		c.stop() // ends the reading goroutine too (its pipe closes)
		return nil, err
	}
	return c, nil
}

// stop ends the client.
func (c *echoClient) stop() { _ = c.cmd.Process.Kill(); _ = c.cmd.Wait() }

// key types one byte and waits for its echo.
func (c *echoClient) key() error {
	b := byte('a' + c.i%26)
	c.i++
	if c.trace {
		hoptrace.Mark(hoptrace.Typed)
	}
	if _, err := c.stdin.Write([]byte{b}); err != nil {
		return fmt.Errorf("%s: %w", c.what, err)
	}
	for {
		ch, err := c.r.ReadByte()
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		if ch == b {
			if c.trace {
				hoptrace.Mark(hoptrace.Echoed)
			}
			return nil
		}
	}
}

// echoLatencies times n keystrokes of each client, one client's then the
// next's in turn, after a warm-up of each.
func echoLatencies(n int, cs ...*echoClient) ([]latencies, error) {
	for range n/10 + 1 {
		for _, c := range cs {
			if err := c.key(); err != nil {
				return nil, err
			}
		}
	}
	out := make([]latencies, len(cs))
	for range n {
		for i, c := range cs {
			start := time.Now()
			if err := c.key(); err != nil {
				return nil, err
			}
			out[i] = append(out[i], time.Since(start))
		}
	}
	return out, nil
}

// echoLatency starts cmd, waits for "ready", then types n bytes one at a
// time and times each one's echo.
func echoLatency(cmd *exec.Cmd, n int) (latencies, error) {
	c, err := startEcho(cmd, false)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	lat, err := echoLatencies(n, c)
	if err != nil {
		return nil, err
	}
	return lat[0], nil
}
