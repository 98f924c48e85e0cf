package wire

import "time"

// The NATS liveness of an agent's connection. The agent pings its server
// every PingInterval; a server pings a client it has heard nothing from for
// PingInterval (an agent's ping counts), so an idle agent costs one ping and
// one pong each interval and no ping of the server's own. Each side gives up
// on the connection when MaxPingsOut of its pings are unanswered at the next
// tick: the agent notices a half-open link within 5–10 s, the server within
// 15 s of the last thing it heard from the agent (its disconnect event ends
// the agent's presence). Over wss the control plane watches the link itself
// (12 s without a byte from the agent) and spares its embedded server the
// pings. The server also pings every client once an hour, and a new one
// after 2 s, to measure its round trip. Shorter intervals notice sooner
// and cost more: each ping is a read, a write and two wake-ups on each
// side, which at 10,000 idle agents is most of what the control plane does
// (issue 20, BENCHMARKS.md).
const (
	PingInterval = 5 * time.Second
	MaxPingsOut  = 1
)
