package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/enroll"
)

// The environment of a fleet process: the directory of the identities it
// runs (one enroll.Config file each) and the agents' root.
const (
	envFleetDir  = "OUTPOST_BENCH_FLEET_DIR"
	envFleetRoot = "OUTPOST_BENCH_FLEET_ROOT"
	envFleetRate = "OUTPOST_BENCH_FLEET_RATE" // agents started a second
	// fleetMetricsFile, in a fleet process's directory, holds the address
	// where it answers its runtime figures (selfMetrics) as JSON.
	fleetMetricsFile = "metrics.addr"
)

// fleetStartRate is how many agents a second the whole fleet starts: a
// fleet of laptops comes online over time, and 10,000 connects at one
// instant, each timing out after 10 s on a server that verifies a JWT per
// connect, only measure how the retries pile up (the reconnect storm after
// a restart measures the herd the agents' own backoff makes).
var fleetStartRate = 500

// fleetNice (-fleet-nice) is the nice value the fleet processes run at; 0
// leaves them at the bench's own priority. The rows of a run with it say
// so in their names.
var fleetNice int

// agentsPerProcess is how many agents one fleet process runs. An agent
// holds two files (its NATS connection and a netlink socket that watches
// for link changes), so 1,000 stay far under the usual 20,000 hard limit on
// open files, and a process is a unit to kill: SIGKILL to one is 1,000
// laptops dropping off at once.
var agentsPerProcess = 1000

// fleet is the load suite's agents: child processes of this program (the
// bench binary, started again as a fleet process), each running its share
// of the identities with the real agent, apart from the driver that makes
// the calls.
type fleet struct {
	procs []*fleetProc
}

// fleetProc is one fleet process and the agents it runs.
type fleetProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	ids  []string // agent ids, "a<i>"
	dir  string   // its identities and its fleetMetricsFile
}

// startFleet writes the identities under dir and starts a fleet process for
// every agentsPerProcess of them. Each process's log is dir/fleet/p<N>.log.
func startFleet(dir string, idents []*enroll.Config, root string) (*fleet, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	f := &fleet{}
	for p, lo := 0, 0; lo < len(idents); p, lo = p+1, lo+agentsPerProcess {
		hi := min(lo+agentsPerProcess, len(idents))
		pd := filepath.Join(dir, "fleet", "p"+strconv.Itoa(p))
		if err := os.MkdirAll(pd, 0o700); err != nil {
			f.stop()
			return nil, err
		}
		fp := &fleetProc{done: make(chan struct{}), dir: pd}
		for i := lo; i < hi; i++ {
			id := idents[i].AgentID().ID
			if err := idents[i].Save(filepath.Join(pd, id+".json")); err != nil {
				f.stop()
				return nil, err
			}
			fp.ids = append(fp.ids, id)
		}
		logf, err := os.OpenFile(pd+".log", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			f.stop()
			return nil, err
		}
		fp.cmd = exec.Command(exe)
		if fleetNice > 0 {
			// nice(1) execs the fleet with every thread at the lower
			// priority (Linux's nice is per thread: a renice after start
			// would miss the threads made before it).
			fp.cmd = exec.Command("nice", "-n", strconv.Itoa(fleetNice), exe)
		}
		nprocs := (len(idents) + agentsPerProcess - 1) / agentsPerProcess
		rate := max(1, fleetStartRate/nprocs)
		fp.cmd.Env = append(os.Environ(), envFleetDir+"="+pd, envFleetRoot+"="+root, envFleetRate+"="+strconv.Itoa(rate))
		fp.cmd.Stdout, fp.cmd.Stderr = logf, logf
		setParentDeath(fp.cmd)
		if err := fp.cmd.Start(); err != nil {
			logf.Close()
			f.stop()
			return nil, err
		}
		go func() { _ = fp.cmd.Wait(); logf.Close(); close(fp.done) }()
		f.procs = append(f.procs, fp)
	}
	return f, nil
}

// stop ends every fleet process cleanly (its agents say goodbye).
func (f *fleet) stop() {
	var wg sync.WaitGroup
	for _, p := range f.procs {
		wg.Add(1)
		go func() { defer wg.Done(); stopChild(p.cmd.Process, p.done) }()
	}
	wg.Wait()
}

// kill SIGKILLs fleet process i: its agents vanish without a goodbye,
// their connections closed by the kernel.
func (f *fleet) kill(i int) {
	_ = f.procs[i].cmd.Process.Kill()
	<-f.procs[i].done
}

// cpu is the CPU time every fleet process has used (a killed one's is
// lost).
func (f *fleet) cpu() time.Duration {
	var sum time.Duration
	for _, p := range f.procs {
		sum += procCPU(p.cmd.Process.Pid)
	}
	return sum
}

// metrics reads every fleet process's runtime figures, one slot each in
// the order of f.procs: a process that is gone or does not answer has a
// zero slot (nil Runtime).
func (f *fleet) metrics() []cpMetrics {
	out := make([]cpMetrics, len(f.procs))
	for i, p := range f.procs {
		select {
		case <-p.done:
			continue
		default:
		}
		addr, err := os.ReadFile(filepath.Join(p.dir, fleetMetricsFile))
		if err != nil {
			continue
		}
		resp, err := metricsClient.Get("http://" + string(addr) + "/")
		if err != nil {
			continue
		}
		var m cpMetrics
		err = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if err == nil {
			out[i] = m
		}
	}
	return out
}

// rss is the resident set of every fleet process together.
func (f *fleet) rss() int64 {
	var sum int64
	for _, p := range f.procs {
		r, _ := procMemory(p.cmd.Process.Pid)
		sum += r
	}
	return sum
}

// runFleetProcess runs the agents of a fleet process when this process was
// started as one (envFleetDir set), until SIGTERM; it reports whether it was.
func runFleetProcess() bool {
	dir := os.Getenv(envFleetDir)
	if dir == "" {
		return false
	}
	rate, _ := strconv.Atoi(os.Getenv(envFleetRate))
	if err := serveFleet(dir, os.Getenv(envFleetRoot), max(1, rate)); err != nil {
		fmt.Fprintln(os.Stderr, "bench fleet:", err)
		os.Exit(1)
	}
	return true
}

func serveFleet(dir, root string, rate int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var agents []*agent.Agent
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		ident, err := enroll.LoadConfig(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		a, err := agent.New(agent.Config{Identity: ident, Root: root, Logger: quiet})
		if err != nil {
			return err
		}
		agents = append(agents, a)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var wg sync.WaitGroup
	// This process's runtime figures, for the driver's tail report.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, fleetMetricsFile), []byte(ln.Addr().String()), 0o600); err != nil {
		ln.Close()
		return err
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(selfMetrics())
	}), ReadHeaderTimeout: 5 * time.Second}
	wg.Add(2)
	go func() { defer wg.Done(); _ = hs.Serve(ln) }()
	go func() {
		defer wg.Done()
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for _, a := range agents {
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.Run(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "agent %s: %v\n", a.Hello().Agent, err)
			}
		}()
	}
	wg.Wait()
	return nil
}
