package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
)

// streamBytes is how much output the stream suite moves: 1 GiB.
const streamBytes = 1 << 30

// Environment of the child process that runs the stream suite's agent, so
// that its memory is measured apart from the control plane's.
const (
	envChildConfig = "OUTPOST_BENCH_AGENT_CONFIG"
	envChildRoot   = "OUTPOST_BENCH_AGENT_ROOT"
)

// runChildAgent serves as the stream suite's agent when this process was
// started as one; it reports whether it was.
func runChildAgent() bool {
	cfgPath := os.Getenv(envChildConfig)
	if cfgPath == "" {
		return false
	}
	if prof := os.Getenv("OUTPOST_BENCH_AGENT_CPUPROFILE"); prof != "" {
		if f, err := os.Create(prof); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	ident, err := enroll.LoadConfig(cfgPath)
	if err == nil {
		var a *agent.Agent
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		if a, err = agent.New(agent.Config{Identity: ident, Root: os.Getenv(envChildRoot), Logger: quiet}); err == nil {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			err = a.Run(ctx)
			stop()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench agent:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	return true
}

// benchStream: 1 GiB of process output through the events stream (SSE over
// HTTP → control plane → NATS → agent → process), next to raw NATS
// pub/sub throughput through the same server, with the peak RSS of the
// control plane's process and of the agent's.
func benchStream(ctx context.Context, e *env) ([]row, error) {
	id := "streamer"
	child, err := startChildAgent(ctx, e, id)
	if err != nil {
		return nil, err
	}
	defer child.stop()
	raw, err := rawNATS(ctx, e, streamBytes)
	if err != nil {
		return nil, fmt.Errorf("raw nats: %w", err)
	}
	resetPeakRSS(os.Getpid())
	resetPeakRSS(child.cmd.Process.Pid)
	got, took, err := streamOnce(ctx, e.cl.Agent(e.ws, id), streamBytes)
	if err != nil {
		return nil, err
	}
	if got != streamBytes {
		return nil, fmt.Errorf("streamed %d bytes, want %d", got, streamBytes)
	}
	mbs := float64(got) / took.Seconds() / 1e6
	cpRSS, agentRSS := peakRSS(os.Getpid()), peakRSS(child.cmd.Process.Pid)
	return []row{
		{Name: "stream 1 GiB through SSE (MB/s) vs raw NATS pub/sub", Outpost: fmt.Sprintf("%.0f MB/s", mbs),
			Baseline: fmt.Sprintf("%.0f MB/s", raw), Ratio: fmt.Sprintf("%.2fx", mbs/raw), Goal: "≥ 150 MB/s", Met: yesNo(mbs >= 150)},
		{Name: "  peak RSS: control plane + NATS + bench client", Outpost: mib(cpRSS)},
		{Name: "  peak RSS: agent", Outpost: mib(agentRSS), Goal: "bounded (< 256 MiB)", Met: yesNo(agentRSS > 0 && agentRSS < 256<<20)},
	}, nil
}

// streamOnce starts a process printing n bytes and reads its events to
// the end, counting output bytes.
func streamOnce(ctx context.Context, t *client.Target, n int64) (int64, time.Duration, error) {
	start := time.Now()
	st, err := t.StartProcess(ctx, client.StartProcessRequest{Command: "head -c " + strconv.FormatInt(n, 10) + " /dev/zero"})
	if err != nil {
		return 0, 0, err
	}
	var got int64
	exit := -1
	err = t.Events(ctx, st.ID, 0, func(ev client.ProcessEvent) error {
		switch ev.Kind {
		case client.EventOutput:
			got += int64(len(ev.Chunk.Data))
		case client.EventExit:
			exit = ev.Exit.ExitCode
		}
		return nil
	})
	if err == nil && exit != 0 {
		err = fmt.Errorf("streamer exited %d", exit)
	}
	return got, time.Since(start), err
}

// childAgent is the stream suite's agent process.
type childAgent struct {
	cmd  *exec.Cmd
	done chan error
}

// startChildAgent enrolls agent id and runs it in a child process (this
// binary again), waiting until it is online.
func startChildAgent(ctx context.Context, e *env, id string) (*childAgent, error) {
	ident, err := e.enroll(ctx, client.EnrollmentTokenRequest{Agent: id})
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(e.dir, id+".json")
	if err := ident.Save(cfg); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &childAgent{cmd: exec.Command(self), done: make(chan error, 1)}
	c.cmd.Env = append(os.Environ(), envChildConfig+"="+cfg, envChildRoot+"="+e.root)
	c.cmd.Stderr = os.Stderr
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { c.done <- c.cmd.Wait() }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ag, err := e.cl.GetAgent(ctx, e.ws, id)
		if err == nil && ag.Status == client.StatusOnline {
			return c, nil
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("child agent not online: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop asks the child agent to stop and waits for it (killing it after 10 s).
func (c *childAgent) stop() { stopChild(c.cmd.Process, c.done) }

// rawNATS measures core NATS pub/sub throughput through the control
// plane's server: n bytes in 1 MiB messages from one connection to another,
// with a subscriber acknowledgement every 16 MiB so the publisher never
// outruns the subscriber into a slow-consumer cut. Both connections use an
// enrolled agent's credentials on the one subject it may both publish
// and subscribe to (its rpc subject).
func rawNATS(ctx context.Context, e *env, n int64) (float64, error) {
	ident, err := e.enroll(ctx, client.EnrollmentTokenRequest{Agent: "natsbench"})
	if err != nil {
		return 0, err
	}
	connect := func() (*nats.Conn, error) {
		return nats.Connect(ident.NATSServers(), ident.NATSOptions()...)
	}
	pub, err := connect()
	if err != nil {
		return 0, err
	}
	defer pub.Close()
	sub, err := connect()
	if err != nil {
		return 0, err
	}
	defer sub.Close()
	prefix := "agent." + e.ws + ".natsbench."
	const msgSize, ackEvery = 1 << 20, 16
	acks := make(chan struct{}, 1024)
	all := make(chan struct{})
	var got int64 // owned by the subscription's callback goroutine
	var count int
	s, err := sub.Subscribe(prefix+"rpc", func(m *nats.Msg) {
		got += int64(len(m.Data))
		if count++; count%ackEvery == 0 {
			acks <- struct{}{}
		}
		if got >= n && got-int64(len(m.Data)) < n {
			close(all)
		}
	})
	if err != nil {
		return 0, err
	}
	defer s.Unsubscribe()
	if err := sub.Flush(); err != nil {
		return 0, err
	}
	msg := make([]byte, msgSize)
	start := time.Now()
	sent := 0
	for total := int64(0); total < n; total += msgSize {
		if err := pub.Publish(prefix+"rpc", msg); err != nil {
			return 0, err
		}
		if sent++; sent%ackEvery == 0 && sent > 2*ackEvery {
			select { // keep at most two windows in flight
			case <-acks:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
	}
	select {
	case <-all:
	case <-time.After(60 * time.Second):
		return 0, errors.New("subscriber stalled")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return float64(n) / time.Since(start).Seconds() / 1e6, nil
}

// resetPeakRSS restarts the kernel's peak RSS count of pid (Linux; best
// effort).
func resetPeakRSS(pid int) {
	_ = os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0)
}

// peakRSS is pid's peak resident set size in bytes (Linux VmHWM; 0
// elsewhere).
func peakRSS(pid int) int64 {
	_, peak := procMemory(pid)
	return peak
}

// startProfile profiles this process's CPU into path, and asks a stream
// child agent to profile into path.agent.
func startProfile(path string) (stop func(), err error) {
	stop, err = startCPUProfile(path)
	if err == nil {
		os.Setenv("OUTPOST_BENCH_AGENT_CPUPROFILE", path+".agent")
		serveProfile = path + ".serve"
	}
	return stop, err
}
