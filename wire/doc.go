// Package wire is the protocol between the control plane and agents: msgpack
// envelopes, op names, request and response bodies, and the one error model
// that maps to HTTP. It imports only the standard library and msgpack.
// PROTOCOL.md beside this file documents every op. reasons.json is the one
// table of error codes and reasons: `go generate ./wire` makes the Code* and
// Reason* constants (errors_generated.go) and the error tables of PROTOCOL.md
// and docs/API.md from it.
package wire
