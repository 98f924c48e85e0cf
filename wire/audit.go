package wire

import "time"

// AuditEvent is one operation an agent ran: one line of its local audit log
// (JSON lines), the body it publishes on agent.<ws>.<agent>.audit (JSON),
// and an event of the control plane's copy (GET /v1/workspaces/{ws}/audit).
// One shape for all three, so the copy can never say more or less than the
// machine's own log (API.md: {"time","op","session"?,"epoch"?,
// "argv"|"path","result","bytes"?,"durationMs"}).
type AuditEvent struct {
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	Agent   string    `json:"agent,omitempty"`
	Op      string    `json:"op"`
	Session string    `json:"session,omitempty"`
	Epoch   uint64    `json:"epoch,omitempty"`
	// Argv is the command an exec or process start ran (shell text as
	// sh -c TEXT); arguments are the caller's, environment values never logged.
	Argv []string `json:"argv,omitempty"`
	// Path is the path the op named; To the second one of a move.
	Path string `json:"path,omitempty"`
	To   string `json:"to,omitempty"`
	// Result is "ok", or the error's code and reason ("permission_denied/policy").
	Result     string `json:"result"`
	Bytes      int64  `json:"bytes,omitempty"`
	DurationMs int64  `json:"durationMs"`
}
