//go:build !agent

package main

// serverCommands are the control plane's commands, left out of the agent
// build.
func serverCommands() map[string]command {
	return map[string]command{
		"up":          {"everything on one machine: control plane, embedded NATS and a local agent", runUp},
		"serve":       {"the control plane", runServe},
		"release":     {"release keygen | publish: sign agent releases for self-update", runRelease},
		"nats-config": {"prepare a state dir for an external NATS cluster and print its server config", runNATSConfig},
	}
}
