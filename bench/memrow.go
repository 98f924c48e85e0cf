package main

import (
	"fmt"
	"os"
	"strings"
)

// serveHeapProfile, when set (-serve-heapprofile), is where the load suite
// writes outpost serve's heap profile (and its goroutine profile, to
// FILE.goroutine) taken once the whole fleet is online.
var serveHeapProfile string

// serveEnv (-serve-env) is environment for outpost serve alone (and, with
// -nats-apart, its nats-server): the runtime's settings (GOGC, GOMEMLIMIT,
// GODEBUG) to weigh against the defaults in the same conditions, without
// touching the fleet's or the driver's.
var serveEnv envFlag

// envFlag is a repeatable KEY=VALUE flag.
type envFlag []string

func (e *envFlag) String() string { return strings.Join(*e, " ") }

func (e *envFlag) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", v)
	}
	*e = append(*e, v)
	return nil
}

// memoryRows reads what outpost serve holds per agent with the fleet online
// and idle: its live heap and goroutine stacks after a collection, and its
// goroutines. The collections are the heap profile's (gc=1), so the figures
// are of live memory only, not of garbage waiting for the next cycle.
// when says at what point (online, after the drives); with
// -serve-heapprofile FILE, the heap and goroutine profiles of this point go
// to FILE+suffix and FILE+suffix.goroutine.
//
// Beside them: the stack the goroutines use (what the collector scans)
// against what is allocated to them, and the heap goal, which with the
// stacks is most of the RSS (the runtime keeps about the goal's pages).
func memoryRows(sp *serveProc, cfg loadConfig, when, suffix string) []row {
	name := fmt.Sprintf("%d agents %s", cfg.agents, when)
	if len(serveEnv) > 0 {
		name += " (serve with " + serveEnv.String() + ")"
	}
	path := os.DevNull
	if serveHeapProfile != "" {
		path = serveHeapProfile + suffix
	}
	// Two collections: what sync.Pools held at the first (net/http's
	// buffers of the driver's closed connections, among others) survives
	// it in the pools' victim caches, and is gone after the second.
	u := "http://" + sp.pprof + "/debug/pprof/heap?gc=1"
	if err := download(u, os.DevNull); err != nil {
		return []row{{Name: name + ": control plane memory per agent", Outpost: "FAILED: " + ends(err.Error()), Met: "NO"}}
	}
	if err := download(u, path); err != nil {
		return []row{{Name: name + ": control plane memory per agent", Outpost: "FAILED: " + ends(err.Error()), Met: "NO"}}
	}
	if path != os.DevNull {
		if err := download("http://"+sp.pprof+"/debug/pprof/goroutine", path+".goroutine"); err != nil {
			fmt.Fprintln(os.Stderr, "bench: serve goroutine profile:", err)
		}
	}
	s, err := sp.sample(nil)
	if err != nil {
		return []row{{Name: name + ": control plane memory per agent", Outpost: "FAILED: " + ends(err.Error()), Met: "NO"}}
	}
	n := float64(cfg.agents)
	r := s.m.Runtime
	live, stacks, used := r["/gc/heap/live:bytes"], r["/memory/classes/heap/stacks:bytes"], r["/gc/scan/stack:bytes"]
	return []row{{
		Name: name + ": control plane live heap / goroutine stacks (used) / goroutines per agent (after two GCs)",
		Outpost: fmt.Sprintf("%.1f KiB / %.1f KiB (%.1f) / %.2f (live heap %.0f MiB, stacks %.0f MiB, heap goal %.0f MiB, heap free kept %.0f MiB, unused in spans %.0f MiB, RSS %s)",
			live/n/1024, stacks/n/1024, used/n/1024, r["/sched/goroutines:goroutines"]/n, live/(1<<20), stacks/(1<<20), r["/gc/heap/goal:bytes"]/(1<<20),
			r["/memory/classes/heap/free:bytes"]/(1<<20), r["/memory/classes/heap/unused:bytes"]/(1<<20), mib(s.rss)),
		Baseline: "—", Ratio: "—", Goal: loadNote(),
	}}
}
