//go:build agent

package main

// serverCommands is empty in the agent build: it links neither the NATS
// server nor the signing authority.
func serverCommands() map[string]command { return nil }
