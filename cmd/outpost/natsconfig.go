//go:build !agent

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/outposthq/outpost/controlplane"
)

// runNATSConfig prepares a state dir for control-plane replicas on an
// external NATS and prints the nats-server configuration that trusts it.
func runNATSConfig(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("nats-config", "--state-dir DIR [--server-name NAME] [--listen ADDR] [--cluster NAME --routes URLS] [--tls-cert FILE --tls-key FILE] [--websocket-listen ADDR]", stderr)
	stateDir := fs.String("state-dir", "", "state dir to prepare and then copy to every control-plane replica (required)")
	var c controlplane.NATSConfig
	fs.StringVar(&c.ServerName, "server-name", "outpost-1", "this server's unique name")
	fs.StringVar(&c.Listen, "listen", "0.0.0.0:4222", "client listen address")
	fs.StringVar(&c.StoreDir, "store-dir", "./jetstream", "JetStream store directory")
	fs.StringVar(&c.JWTDir, "jwt-dir", "./jwt", "account resolver directory")
	fs.StringVar(&c.ClusterName, "cluster", "", "cluster name (empty: a single server)")
	fs.StringVar(&c.ClusterListen, "cluster-listen", "0.0.0.0:6222", "cluster listen address")
	routes := fs.String("routes", "", "routes to the other servers, comma-separated (nats-route://host:6222)")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "certificate chain (PEM) for TLS on the client port and the WebSocket listener")
	fs.StringVar(&c.TLSKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	fs.StringVar(&c.WebsocketListen, "websocket-listen", "", "also serve NATS over WebSocket here (agents on wss://), e.g. 0.0.0.0:8443")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 0, "no arguments"); err != nil {
		return err
	}
	if *stateDir == "" {
		return fmt.Errorf("--state-dir is required")
	}
	c.Routes = splitList(*routes)
	conf, err := controlplane.PrepareExternal(*stateDir, c)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, conf)
	return err
}
