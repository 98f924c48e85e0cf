package controlplane

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/outposthq/outpost/authority"
	"github.com/outposthq/outpost/wire"
)

// authDir is where StateDir keeps the NATS authority's keys.
const authDir = "auth"

// maxKVReplicas is the replica count of the state buckets in a cluster of
// three or more servers: a quorum survives one server lost.
const maxKVReplicas = 3

// NATSConfig describes the nats-server configuration PrepareExternal
// writes; zero values take the defaults shown.
type NATSConfig struct {
	// ServerName is the server's unique name in its cluster; default
	// "outpost-1". Give every server its own.
	ServerName string
	// Listen is the client address; default "0.0.0.0:4222".
	Listen string
	// StoreDir is the JetStream store; default "./jetstream".
	StoreDir string
	// JWTDir is where the full account resolver keeps account JWTs;
	// default "./jwt".
	JWTDir string
	// Cluster names the cluster and lists its routes; empty for one server.
	ClusterName   string
	ClusterListen string   // default "0.0.0.0:6222" when ClusterName is set
	Routes        []string // e.g. nats-route://nats-2:6222
	// TLSCert and TLSKey, when set, make the client port (and the
	// WebSocket listener) serve TLS: agents then connect with tls:// or
	// wss:// URLs. Without them the config says where TLS goes.
	TLSCert, TLSKey string
	// WebsocketListen, when set, serves NATS over WebSocket there: agents
	// behind networks that let only HTTPS out connect with wss://.
	WebsocketListen string
}

// PrepareExternal readies stateDir for control-plane replicas on an
// external NATS: it creates the authority (operator, system account, app
// account keys; kept if present) and an admin token, both mode 0600, and
// returns a nats-server configuration that trusts the authority. Run it again
// after an upgrade that adds an account (the agents' account) and restart the
// servers with the new configuration. Copy
// stateDir to every replica (it is all the state they have) and run every
// NATS server with the configuration.
func PrepareExternal(stateDir string, c NATSConfig) (string, error) {
	if stateDir == "" {
		return "", errors.New("prepare external nats: empty state dir")
	}
	a, err := authority.LoadOrCreateAuthority(filepath.Join(stateDir, authDir))
	if err != nil {
		return "", fmt.Errorf("prepare external nats: %w", err)
	}
	tok := "opadm_" + rand.Text()
	err = writeNewFile(filepath.Join(stateDir, adminTokenFile), []byte(tok+"\n"), 0o600)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("prepare external nats: admin token: %w", err)
	}
	return renderNATSConfig(a, c)
}

// renderNATSConfig is the nats-server configuration for authority a: the
// operator it trusts, the system account, a full resolver (which accepts the
// account updates that carry revocations) preloaded with every account, and
// the timings the control plane relies on to notice half-open agents.
func renderNATSConfig(a *authority.Authority, c NATSConfig) (string, error) {
	c.setDefaults()
	accounts, err := a.AccountJWTs()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# nats-server configuration for Outpost, from `outpost nats-config`.")
	w("# Every server of the cluster trusts the same operator; give each its own")
	w("# server_name and list the other servers in routes.")
	w("server_name: %s", strconv.Quote(c.ServerName))
	w("listen: %s", strconv.Quote(c.Listen))
	w("max_payload: %d", natsMaxPayload)
	w("# Agents on sleeping laptops are noticed in seconds, not minutes.")
	w("ping_interval: %s", strconv.Quote(wire.PingInterval.String()))
	w("ping_max: %d", wire.MaxPingsOut)
	w("jetstream { store_dir: %s }", strconv.Quote(c.StoreDir))
	tlsBlock := ""
	if c.TLSCert != "" {
		tlsBlock = fmt.Sprintf("tls { cert_file: %s, key_file: %s }", strconv.Quote(c.TLSCert), strconv.Quote(c.TLSKey))
		w("# Clients (agents, the control plane) reach this port over TLS.")
		w("%s", tlsBlock)
	} else {
		w("# Agents across networks need TLS here: tls { cert_file: \"...\", key_file: \"...\" }")
	}
	if c.WebsocketListen != "" {
		w("# NATS over WebSocket, for agents that may only reach HTTPS (wss://host:port).")
		if tlsBlock != "" {
			w("websocket { listen: %s, %s }", strconv.Quote(c.WebsocketListen), tlsBlock)
		} else {
			w("websocket { listen: %s, no_tls: true }  # put a TLS-terminating proxy in front", strconv.Quote(c.WebsocketListen))
		}
	}
	if c.ClusterName != "" {
		routes := make([]string, len(c.Routes))
		for i, r := range c.Routes {
			routes[i] = strconv.Quote(r)
		}
		w("cluster {")
		w("  name: %s", strconv.Quote(c.ClusterName))
		w("  listen: %s", strconv.Quote(c.ClusterListen))
		w("  routes: [%s]", strings.Join(routes, ", "))
		w("}")
	}
	w("")
	w("# Decentralized auth: operator %s, accounts signed by it.", authority.OperatorName)
	w("operator: %s", strconv.Quote(a.OperatorJWT()))
	w("system_account: %s", strconv.Quote(a.SystemAccountPublicKey()))
	w("# The control plane pushes account updates (revocations) here.")
	w("resolver { type: full, dir: %s, allow_delete: false, interval: \"1m\" }", strconv.Quote(c.JWTDir))
	w("resolver_preload {")
	for _, acc := range accounts {
		w("  # %s", acc.Name)
		w("  %s: %s", acc.Pub, strconv.Quote(acc.JWT))
	}
	w("}")
	return b.String(), nil
}

func (c *NATSConfig) setDefaults() {
	if c.ServerName == "" {
		c.ServerName = "outpost-1"
	}
	if c.Listen == "" {
		c.Listen = "0.0.0.0:4222"
	}
	if c.StoreDir == "" {
		c.StoreDir = "./jetstream"
	}
	if c.JWTDir == "" {
		c.JWTDir = "./jwt"
	}
	if c.ClusterName != "" && c.ClusterListen == "" {
		c.ClusterListen = "0.0.0.0:6222"
	}
}

// loadAuthority loads StateDir's authority. On the embedded server it is
// created on first start; on an external NATS it must already exist, since
// the servers trust it and not one a replica would make up.
func (s *Server) loadAuthority() error {
	dir := filepath.Join(s.cfg.StateDir, authDir)
	var err error
	if s.cfg.NATSURL == "" {
		s.auth, err = authority.LoadOrCreateAuthority(dir)
	} else if s.auth, err = authority.LoadAuthority(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("nats authority: none in %s: prepare it with `outpost nats-config --state-dir %s` and run the NATS servers with the configuration it prints", dir, s.cfg.StateDir)
	}
	if err != nil {
		return fmt.Errorf("nats authority: %w", err)
	}
	return nil
}

// kvReplicas is the replica count of the state buckets.
func (s *Server) kvReplicas() int {
	switch {
	case s.cfg.KVReplicas > 0:
		return s.cfg.KVReplicas
	case s.cfg.NATSURL == "" || s.nc.ConnectedClusterName() == "":
		return 1
	case len(s.nc.Servers()) >= maxKVReplicas:
		return maxKVReplicas
	}
	return 1
}
