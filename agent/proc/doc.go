// Package proc runs commands for the agent.
//
// A Manager owns every process it starts: each one runs in its own process
// group inside the agent's root, and the whole group is killed on timeout, on
// cancellation and when the Manager closes, so nothing outlives the call that
// started it. Exec is the buffered form used by the agent's exec op: it runs a
// command to completion and returns its exit code and capped output.
package proc
