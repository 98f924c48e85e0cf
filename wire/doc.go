// Package wire is the protocol between the control plane and agents: msgpack
// envelopes, op names, request and response bodies, and the one error model
// that maps to HTTP. It imports only the standard library and msgpack.
// PROTOCOL.md beside this file documents every op.
package wire
