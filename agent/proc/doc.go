// Package proc runs commands for the agent.
//
// A Manager owns every process it starts: each one runs in its own process
// group (on Windows, its own job object) inside the agent's root, and the
// whole group is killed on timeout, on cancellation and when the Manager
// closes, so nothing outlives the call that started it.
//
// Every process has one life (lifecycle.go): started under a context whose
// cancellation stops it, waited on by one goroutine, its output pumped into
// a sink and collected after the leader exits, the rest of its group
// killed, then closed. Start makes a streaming process, whose sink is an
// event log read with Read (see API.md "Processes"); Exec is the buffered
// form used by the agent's exec op: the same life with a capped capture as
// the sink, waited on until closed.
package proc
