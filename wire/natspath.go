package wire

// NATSPath is where agents reach NATS over WebSocket on a control plane's
// own HTTPS port (wss://<public host>/v1/nats). An agent that sees it in
// its servers' URLs knows it talks to a control plane, which ends the
// WebSocket itself and takes unmasked frames inside its TLS.
const NATSPath = "/v1/nats"
