package main

import (
	"fmt"
	"os"
)

// serveHeapProfile, when set (-serve-heapprofile), is where the load suite
// writes outpost serve's heap profile (and its goroutine profile, to
// FILE.goroutine) taken once the whole fleet is online.
var serveHeapProfile string

// memoryRows reads what outpost serve holds per agent with the fleet online
// and idle: its live heap and goroutine stacks after a collection, and its
// goroutines. The collection is the heap profile's (gc=1), so the figures
// are of live memory only, not of garbage waiting for the next cycle.
func memoryRows(sp *serveProc, cfg loadConfig) []row {
	name := fmt.Sprintf("%d agents online", cfg.agents)
	path := serveHeapProfile
	if path == "" {
		path = os.DevNull
	}
	u := "http://" + sp.pprof + "/debug/pprof/heap?gc=1"
	if err := download(u, path); err != nil {
		return []row{{Name: name + ": control plane memory per agent", Outpost: "FAILED: " + ends(err.Error()), Met: "NO"}}
	}
	if serveHeapProfile != "" {
		if err := download("http://"+sp.pprof+"/debug/pprof/goroutine", serveHeapProfile+".goroutine"); err != nil {
			fmt.Fprintln(os.Stderr, "bench: serve goroutine profile:", err)
		}
	}
	s, err := sp.sample(nil)
	if err != nil {
		return []row{{Name: name + ": control plane memory per agent", Outpost: "FAILED: " + ends(err.Error()), Met: "NO"}}
	}
	n := float64(cfg.agents)
	live := s.m.Runtime["/gc/heap/live:bytes"]
	stacks := s.m.Runtime["/memory/classes/heap/stacks:bytes"]
	g := s.m.Runtime["/sched/goroutines:goroutines"]
	return []row{{
		Name: name + ": control plane live heap / goroutine stacks / goroutines per agent (after a GC)",
		Outpost: fmt.Sprintf("%.1f KiB / %.1f KiB / %.2f (live heap %.0f MiB, stacks %.0f MiB, RSS %s)",
			live/n/1024, stacks/n/1024, g/n, live/(1<<20), stacks/(1<<20), mib(s.rss)),
		Baseline: "—", Ratio: "—", Goal: loadNote(),
	}}
}
