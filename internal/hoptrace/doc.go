// Package hoptrace timestamps one keystroke's hops through the terminal
// path (control plane, agent, PTY and back) in a debug build: with
// the build tag hoptrace, Mark records the time each hop was reached and
// Report prints the median and p99 of each hop's delay; without it both
// are no-ops the compiler removes. `go run -tags hoptrace ./bench -rows
// echo` prints the breakdown after the echo rows.
package hoptrace

// Hops of one keystroke, in order. The first and last are the bench's own
// (the client process between them and the control plane is another
// process: Typed → CPStdin and CPSent → Echoed are its two halves).
const (
	Typed      = iota // the bench wrote the byte to the client's stdin
	CPStdin           // the control plane read the client's stdin frame
	AgentStdin        // the agent got it (from its bulk connection or NATS)
	PTYWritten        // written to the PTY
	PTYRead           // the echo read from the PTY
	AgentSent         // the agent published the output
	CPOutput          // the control plane got the output
	CPSent            // the control plane wrote it to the client's socket
	Echoed            // the bench read the echo from the client's stdout
	NumHops
)

// Names are the hops' names, for Report.
var Names = [NumHops]string{"typed", "cp stdin frame", "agent got stdin", "pty written", "pty echo read", "agent published", "cp got output", "cp wrote ws", "echo read"}
