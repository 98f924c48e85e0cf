package controlplane

import "github.com/outposthq/outpost/presence"

// Stats are the control plane's own counters, for an operator (served by
// `outpost serve --pprof` on /debug/metrics) and the load tool: what
// presence costs and how many agents it sees in each state.
type Stats struct {
	// PresenceMessages is how many hello, heartbeat and goodbye messages
	// presence has received since the start.
	PresenceMessages uint64 `json:"presence_messages"`
	// Agents counts the agents presence knows by status.
	Agents map[presence.Status]int `json:"agents"`
	// NATSConnections is the embedded server's client connections (0 on
	// an external cluster).
	NATSConnections int `json:"nats_connections"`
	// Admission is the agents' NATS connections over wss waiting for, and
	// admitted to, their connect exchange with the embedded server.
	Admission AdmissionStats `json:"admission"`
}

// Stats reads the counters now; before Start has finished, and after
// Close has begun, it is all zero.
func (s *Server) Stats() Stats {
	var st Stats
	if !s.ready.Load() {
		return st
	}
	st.Admission = s.admit.stats()
	st.PresenceMessages = s.presence.Messages()
	st.Agents = s.presence.Counts()
	if s.ns != nil {
		st.NATSConnections = s.ns.NumClients()
	}
	return st
}
