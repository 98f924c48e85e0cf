// Command bench measures Outpost against its baselines in one run and prints one
// table: for each figure, Outpost's value, the baseline measured in the same
// process, and the ratio. Everything runs on loopback.
//
//	go run ./bench               # every row
//	go run ./bench -rows exec    # some rows
//	go run ./bench -rows storm   # the agents suite's reconnect storm alone
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one line of the table.
type row struct {
	Name     string
	Outpost  string
	Baseline string
	Ratio    string
	Goal     string
	Met      string
}

// suite is one group of rows sharing a setup.
type suite struct {
	name string
	run  func(ctx context.Context, env *env) ([]row, error)
	// named: run only when -rows names it (its rows are part of another
	// suite's already).
	named bool
}

func suites() []suite {
	return []suite{
		{"exec", benchExec, false},
		{"swap", benchSwap, false},
		{"cli", benchCLI, false},
		{"offline", benchOffline, false},
		{"agents", benchAgents, false}, // the storm's rows too
		{"scale", benchScale, false},   // 10,000 agents (issue 20)
		{"stream", benchStream, false},
		{"files", benchFiles, false},
		{"echo", benchEcho, false},
		{"console", benchConsole, false},
		{"storm", benchStorm, true},
		{"tree", benchTree, false},
		{"ports", benchPorts, false},
		{"carry", benchCarry, false},
	}
}

func main() {
	if runChildAgent() || runFleetProcess() {
		return
	}
	only := flag.String("rows", "", "comma-separated suites to run (default all)")
	n := flag.Int("n", 300, "iterations per latency figure")
	transports := flag.String("transport", "plain", "comma-separated: plain (HTTP, native NATS), tls (HTTPS, agents on wss:// through the API's port); rows of each, side by side")
	flag.IntVar(&load.agents, "agents", load.agents, "agents of the load suite")
	flag.IntVar(&carryMB, "carry-mb", carryMB, "size of the carry suite's tree in MiB (1024 for issue 17's figures)")
	flag.IntVar(&carryFirstRuns, "carry-first-runs", carryFirstRuns, "times the carry suite runs the first carry and rsync -a of the whole tree each, interleaved (the median and the best are shown): an odd number; each run keeps two copies of the tree on disk until the suite ends")
	flag.IntVar(&carryRounds, "carry-rounds", carryRounds, "change sets of 1% of the files the carry suite's p50 is taken over (5 for issue 17's figures)")
	flag.IntVar(&load.rate, "rate", load.rate, "calls per second of the load suite")
	flag.DurationVar(&load.duration, "load-duration", load.duration, "how long the load suite drives calls")
	flag.IntVar(&scale.agents, "scale-agents", scale.agents, "agents of the scale suite")
	flag.IntVar(&agentsPerProcess, "agents-per-process", agentsPerProcess, "agents in each fleet process of the load suites")
	flag.IntVar(&fleetNice, "fleet-nice", 0, "run the load suites' fleet processes at this nice value (1-19), so that on a shared machine the agents, which stand in for other machines, take CPU from the control plane only when it has none to use")
	flag.IntVar(&fleetStartRate, "start-rate", fleetStartRate, "agents a second the load suites' fleet starts")
	flag.IntVar(&driverConns, "driver-conns", 0, "connections the load suites' driver opens to the control plane at most, all of them before the drives and kept (0: one per call in flight, up to the in-flight limit)")
	flag.StringVar(&serveTrace, "serve-trace", "", "write outpost serve's execution trace of the load suite's mix drive (and its block and mutex profiles of the same seconds, FILE.block, FILE.mutex)")
	flag.BoolVar(&natsApart, "nats-apart", false, "run the load suites' NATS as a nats-server process of its own (an external cluster of one, configured by outpost nats-config) with outpost serve on it: the agents' connections outside serve's heap; RSS and CPU rows then add both processes; only with -transport plain")
	flag.Var(&serveEnv, "serve-env", "an environment variable for outpost serve alone (and, with -nats-apart, its nats-server), KEY=VALUE (GOGC=50, GOMEMLIMIT=..., GODEBUG=...); repeat for more")
	flag.StringVar(&serveHeapProfile, "serve-heapprofile", "", "write outpost serve's heap profile (and goroutine profile, FILE.goroutine) with the load suite's fleet online, after the drives to FILE.after (FILE.after.goroutine), and what it allocated during the mix drive to FILE.drive (pprof -sample_index=alloc_space; the runtime publishes allocations at the end of a collection, so FILE.drive is empty when none ended in the drive: FILE.after with -base FILE holds all the drives' allocations)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process (and, for stream, the agent's to FILE.agent; for agents, outpost serve's to FILE.serve, and during the reconnect storm to FILE.serve.storm)")
	flag.StringVar(&carryProfile, "carry-cpuprofile", "", "write CPU profiles of this process during each of the carry suite's first carries alone (FILE.first, FILE.first1, ...) and each incremental carry (FILE.inc0...); not with -cpuprofile")
	flag.DurationVar(&echoGap, "echo-gap", echoGap, "pause before each timed keystroke of the echo suite")
	flag.StringVar(&echoSamples, "echo-samples", "", "append every timed keystroke's echo time of the echo suite to FILE, one a line: transport, round, client (outpost or ssh), microseconds")
	flag.StringVar(&echoTrace, "echo-trace", "", "write this process's execution trace of the echo suite's timed keystrokes (the control plane's and the agent's goroutines) to FILE")
	flag.StringVar(&echoMemProfile, "echo-memprofile", "", "record every allocation of this process and write its allocation profile before the echo suite's timed keystrokes to FILE.before and after them to FILE: go tool pprof -sample_index=alloc_objects -diff_base FILE.before FILE shows the control plane's and the agent's allocations of those keystrokes")
	flag.StringVar(&cpStateDir, "cp-state-dir", "", "make the control plane's state directory (its JetStream store: the carry suite's snapshots) under DIR; \"same\": in the bench's directory, on the agents' file system. Default: "+storeDirDefault+" when the carry suite is the only one that runs (-rows carry) and it exists (a file system of its own, as the control plane's machine has), else the bench's directory; the rows of other suites name the place when it is not the bench's directory")
	flag.BoolVar(&cpDebugLog, "cp-log", false, "write the control plane's debug log (a carry's phases, among others) to stderr")
	flag.Parse()
	if echoMemProfile != "" {
		runtime.MemProfileRate = 1
	}
	if fleetNice < 0 || fleetNice > 19 {
		fmt.Fprintln(os.Stderr, "bench: -fleet-nice must be 0 to 19")
		os.Exit(2)
	}
	if natsApart && *transports != "plain" {
		fmt.Fprintln(os.Stderr, "bench: -nats-apart runs with -transport plain only")
		os.Exit(2)
	}
	if err := checkCarryFlags(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if *cpuProfile != "" && carryProfile != "" {
		// Go runs one CPU profile at a time: the second would fail midway.
		fmt.Fprintln(os.Stderr, "bench: -cpuprofile and -carry-cpuprofile cannot be used together")
		os.Exit(2)
	}
	if *cpuProfile != "" {
		stop, err := startProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	want, err := wantedSuites(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if cpStateDir == "" {
		cpStateDir = defaultStateDir(want)
	}
	var rows []row
	failed := false
	for _, tr := range strings.Split(*transports, ",") {
		rs, err := runSuites(ctx, *n, tr == "tls", want)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			failed = true
		}
		rows = append(rows, rs...)
	}
	removeBinary()
	printTable(rows)
	if failed {
		os.Exit(1)
	}
}

// defaultStateDir is where the control plane's store goes without
// -cp-state-dir when the suites want run: storeDirDefault when the carry
// suite is the only one (and it exists), else "" (the bench's directory).
// The default is the carry suite's alone: in a run of other suites too, it
// would move their control plane's store as well (one env serves them
// all).
func defaultStateDir(want map[string]bool) string {
	if len(want) != 1 || !want["carry"] {
		return ""
	}
	if fi, err := os.Stat(storeDirDefault); err != nil || !fi.IsDir() {
		return ""
	}
	return storeDirDefault
}

// wantedSuites is the set of suites -rows names (empty: all), or an error
// naming one that does not exist, so that a misspelt suite is not an empty
// table.
func wantedSuites(only string) (map[string]bool, error) {
	known := map[string]bool{}
	for _, s := range suites() {
		known[s.name] = true
	}
	want := map[string]bool{}
	for _, s := range strings.Split(only, ",") {
		if s == "" {
			continue
		}
		if !known[s] {
			return nil, fmt.Errorf("-rows: no suite %q", s)
		}
		want[s] = true
	}
	return want, nil
}

// runSuites runs the wanted suites (all when want is empty) on one env. A
// suite that fails is a FAILED row and the next suite still runs (the rows
// measured before a failure stand); the error names every suite that
// failed.
func runSuites(ctx context.Context, n int, tlsOn bool, want map[string]bool) ([]row, error) {
	e, err := newEnv(ctx, n, tlsOn)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	defer e.Close()
	var rows []row
	var errs []error
	for _, s := range suites() {
		if len(want) > 0 && !want[s.name] || len(want) == 0 && s.named {
			continue
		}
		if tlsOn && s.name == "cli" {
			continue // it starts its own control plane, plaintext
		}
		rs, err := s.run(ctx, e)
		if err != nil {
			err = fmt.Errorf("%s%s: %w", s.name, e.transport(), err)
			errs = append(errs, err)
			rows = append(rows, row{Name: s.name + " suite" + e.transport(), Outpost: "FAILED: " + ends(err.Error()), Met: "NO"})
			continue
		}
		suffix := e.transport()
		if e.stateDir != "" && s.name != "carry" {
			// The carry suite's row names the store's place itself.
			suffix += " [the control plane's store in " + storePlace() + "]"
		}
		load := s.name == "agents" || s.name == "scale" || s.name == "storm"
		if load && fleetNice > 0 {
			suffix += fmt.Sprintf(" [fleet at nice %d]", fleetNice)
		}
		if load && natsApart {
			suffix += " [NATS apart]"
		}
		for i := range rs {
			rs[i].Name += suffix
		}
		rows = append(rows, rs...)
	}
	return rows, errors.Join(errs...)
}

func printTable(rows []row) {
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tOUTPOST\tBASELINE\tRATIO\tGOAL\tMET")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Outpost, r.Baseline, r.Ratio, r.Goal, r.Met)
	}
	tw.Flush()
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}
