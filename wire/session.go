package wire

import "time"

// Transition is one move of a session's pointer: the shape the control
// plane's routing stores in KV and the HTTP API returns (one type for both;
// routing and controlplane/client alias it). Agent is the agent behind To
// from Epoch on; a pool backend that replaced its gone agent moves from
// itself to itself, with the new Agent.
type Transition struct {
	From  string    `json:"from"`
	To    string    `json:"to"`
	Epoch uint64    `json:"epoch"`
	At    time.Time `json:"at"`
	Agent string    `json:"agent,omitempty"`
}

// LastCarry is what the last swap with carry moved: the snapshot restored
// onto the new backend, the backend it was taken on (From), when, and what
// it cost. The control plane's routing stores it in the session and the
// HTTP API returns it (one type for both).
type LastCarry struct {
	Snapshot         string    `json:"snapshot"`
	From             string    `json:"from"`
	TakenAt          time.Time `json:"takenAt"`
	Files            int       `json:"files"`
	TransferredBytes int64     `json:"transferredBytes"`
}
