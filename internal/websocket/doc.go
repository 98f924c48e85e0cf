// Package websocket is a small RFC 6455 WebSocket implementation, server and
// client side: the opening handshake, framing with client masking,
// fragmented messages, ping/pong and the closing handshake. No extensions
// (no compression), no subprotocol negotiation beyond echoing nothing.
//
// It exists because the processes attach path (API.md "attach") needs
// binary and text frames both ways and no WebSocket library is among the
// project's dependencies. The server side takes over an HTTP/1.1
// connection with http.ResponseController.Hijack; the client side upgrades
// through an *http.Client, so its proxy and TLS settings (a pinned CA)
// apply unchanged.
package websocket
