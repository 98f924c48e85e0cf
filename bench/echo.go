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
// -tt` (the attach WebSocket: CLI → control plane → NATS → agent → PTY and
// back) next to `ssh -tt` to the loopback sshd on a direct connection (no
// ControlMaster hop). Both are client processes with piped stdin and
// stdout; one byte is typed, then its echo awaited.
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
	op, err := echoLatency(cmd, n, true)
	if err != nil {
		return nil, fmt.Errorf("outpost exec -tt: %w", err)
	}
	hoptrace.Report(os.Stderr)
	names := [2]string{"keystroke echo p50, `outpost exec -tt` vs `ssh -tt`", "keystroke echo p99, `outpost exec -tt` vs `ssh -tt`"}
	cfg, err := sshPeer(ctx)
	if err != nil {
		return []row{
			{Name: names[0], Outpost: ms(op.pct(50)), Baseline: "skipped: " + err.Error(), Ratio: "—"},
			{Name: names[1], Outpost: ms(op.pct(99)), Baseline: "skipped", Ratio: "—"},
		}, nil
	}
	ssh, err := echoLatency(exec.CommandContext(ctx, "ssh", "-F", cfg, "-o", "ControlMaster=no", "-o", "ControlPath=none",
		"-tt", "peer", echoCommand), n, false)
	if err != nil {
		return nil, fmt.Errorf("ssh -tt: %w", err)
	}
	var rows []row
	for i, p := range []float64{50, 99} {
		a, b := op.pct(p), ssh.pct(p)
		rows = append(rows, row{Name: names[i], Outpost: ms(a), Baseline: ms(b), Ratio: ratio(a, b), Goal: "≤ 1x", Met: yesNo(a <= b)})
	}
	return rows, nil
}

// echoLatency starts cmd, waits for "ready", then types n bytes one at a
// time and times each one's echo; trace: mark the hops Typed and Echoed
// (a hoptrace build).
func echoLatency(cmd *exec.Cmd, n int, trace bool) (latencies, error) {
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
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r := bufio.NewReader(stdout)
	ready := make(chan error, 1)
	go func() {
		for {
			line, err := r.ReadString('\n')
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
	case err := <-ready:
		if err != nil {
			return nil, err
		}
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("no ready line in 30 s")
	}
	i := 0
	return measure(n, func() error {
		b := byte('a' + i%26)
		i++
		if trace {
			hoptrace.Mark(hoptrace.Typed)
		}
		if _, err := stdin.Write([]byte{b}); err != nil {
			return err
		}
		for {
			c, err := r.ReadByte()
			if err != nil {
				return err
			}
			if c == b {
				if trace {
					hoptrace.Mark(hoptrace.Echoed)
				}
				return nil
			}
		}
	})
}
