package controlplane

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
)

// Embedded NATS settings.
const (
	// natsPingInterval and natsMaxPingsOut make a half-open connection (a
	// laptop gone to sleep) noticed in about 6 s instead of minutes.
	natsPingInterval = 2 * time.Second
	natsMaxPingsOut  = 2
	// natsMaxPayload fits a default exec reply (two 1 MiB streams) in one
	// message.
	natsMaxPayload = 8 << 20
	natsReadyWait  = 10 * time.Second
)

// startEmbeddedNATS starts the embedded server: JetStream under StateDir,
// decentralized auth by the authority, listening on cfg.NATSListen.
func (s *Server) startEmbeddedNATS() error {
	host, portStr, err := net.SplitHostPort(s.cfg.NATSListen)
	if err != nil {
		return fmt.Errorf("nats listen address %q: %w", s.cfg.NATSListen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("nats listen address %q: bad port", s.cfg.NATSListen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	if host == "" {
		host = "0.0.0.0"
	}
	opts := &server.Options{
		ServerName:   "outpost",
		Host:         host,
		Port:         port,
		JetStream:    true,
		StoreDir:     filepath.Join(s.cfg.StateDir, "jetstream"),
		PingInterval: natsPingInterval,
		MaxPingsOut:  natsMaxPingsOut,
		MaxPayload:   natsMaxPayload,
		NoSigs:       true,
	}
	if s.tls != nil {
		// Agents come in over WebSocket on the API's port, passed to a
		// listener only loopback can reach (TLS ends at the API).
		opts.Websocket = server.WebsocketOpts{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoTLS: true}
	}
	if s.nativeTLS() {
		// A native port other machines can reach serves TLS with the API's
		// certificate; on loopback it stays plain (our own connections).
		opts.TLSConfig, opts.TLS, opts.TLSVerify = s.tls.config(), true, false
		opts.TLSTimeout = 5
	} else if s.tls == nil && !isLoopback(s.cfg.NATSListen) && !s.cfg.InsecurePlaintext {
		return fmt.Errorf("nats listen %s: an address other machines can reach needs TLS (--tls-cert/--tls-key or --tls-self-signed HOST); --insecure-plaintext serves in clear anyway", s.cfg.NATSListen)
	}
	if err := s.auth.ConfigureServer(opts, filepath.Join(s.cfg.StateDir, "jwt")); err != nil {
		return fmt.Errorf("configure nats auth: %w", err)
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("embedded nats: %w", err)
	}
	ns.SetLoggerV2(natsLogger{s.log.With("component", "nats")}, false, false, false)
	go ns.Start()
	if !ns.ReadyForConnections(natsReadyWait) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return fmt.Errorf("embedded nats on %s did not become ready within %s", s.cfg.NATSListen, natsReadyWait)
	}
	s.ns = ns
	// Our own connection goes to loopback when the server listens on every
	// interface; the port is the one actually bound (port 0 is random).
	addr, ok := ns.Addr().(*net.TCPAddr)
	if !ok {
		ns.Shutdown()
		ns.WaitForShutdown()
		return fmt.Errorf("embedded nats: no listener address")
	}
	connHost := host
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		connHost = "127.0.0.1"
	}
	scheme := "nats://"
	if s.nativeTLS() {
		scheme = "tls://"
	}
	if s.tls != nil {
		ports := ns.PortsInfo(natsReadyWait)
		if ports == nil || len(ports.WebSocket) == 0 {
			ns.Shutdown()
			ns.WaitForShutdown()
			return errors.New("embedded nats: no WebSocket listener")
		}
		s.natsWS = strings.TrimPrefix(ports.WebSocket[0], "ws://")
	}
	s.natsURL = scheme + net.JoinHostPort(connHost, strconv.Itoa(addr.Port))
	return nil
}

// nativeTLS reports whether the embedded server's native port serves TLS:
// with TLS configured, when it listens where other machines can reach it.
func (s *Server) nativeTLS() bool {
	return s.tls != nil && s.cfg.NATSURL == "" && !isLoopback(s.cfg.NATSListen)
}

// connectNATS opens the control plane's three connections: the service
// connection (its state, in the app account), the agents connection (its
// user in the agents' account: requests, replies and presence) and the
// system connection that pushes account JWTs.
func (s *Server) connectNATS() error {
	common := []nats.Option{
		nats.MaxReconnects(-1),
		nats.PingInterval(natsPingInterval),
		nats.MaxPingsOutstanding(natsMaxPingsOut),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				s.log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { s.log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted()) }),
	}
	svc := append([]nats.Option{
		nats.Name("outpost-controlplane"),
		nats.CustomInboxPrefix(subjects.ControlPlaneInboxPrefix),
		// A request buffered during an outage could run long after its
		// caller gave up: fail fast instead.
		nats.ReconnectBufSize(-1),
	}, common...)

	url := s.natsURL
	if s.cfg.NATSURL != "" {
		url = s.cfg.NATSURL
	}
	svcCreds, err := s.serviceCreds()
	if err != nil {
		return err
	}
	if s.nativeTLS() {
		common = append(common, nats.Secure(s.tls.clientConfig()))
		svc = append(svc, nats.Secure(s.tls.clientConfig()))
	}
	nc, err := nats.Connect(url, append(svc, svcCreds)...)
	if err != nil {
		return fmt.Errorf("connect to nats at %s: %w", url, err)
	}
	s.nc = nc

	agentCreds, err := s.auth.AgentsServiceCreds()
	if err != nil {
		return fmt.Errorf("agents credentials: %w", err)
	}
	agentOpt, err := enroll.CredsOption(agentCreds)
	if err != nil {
		return fmt.Errorf("agents credentials: %w", err)
	}
	agentNC, err := nats.Connect(url, append([]nats.Option{
		nats.Name("outpost-controlplane-agents"),
		nats.ReconnectBufSize(-1), // as for the service connection
		agentOpt,
	}, common...)...)
	if err != nil {
		return fmt.Errorf("connect to nats as the agents' control-plane user: %w", err)
	}
	s.agentNC = agentNC

	// The system connection pushes account JWTs (revocations), on the
	// embedded server and on an external one that trusts the authority.
	creds, err := s.auth.SystemCreds()
	if err != nil {
		return fmt.Errorf("system credentials: %w", err)
	}
	opt, err := enroll.CredsOption(creds)
	if err != nil {
		return fmt.Errorf("system credentials: %w", err)
	}
	sys, err := nats.Connect(url, append([]nats.Option{nats.Name("outpost-controlplane-system"), opt}, common...)...)
	if err != nil {
		return fmt.Errorf("connect to nats as the system user: %w", err)
	}
	s.sysNC = sys
	return nil
}

// serviceCreds authenticates the control plane's own connection: the creds
// file NATSCreds when given, else a user of the authority's app account.
func (s *Server) serviceCreds() (nats.Option, error) {
	if s.cfg.NATSCreds != "" {
		return nats.UserCredentials(s.cfg.NATSCreds), nil
	}
	creds, err := s.auth.ServiceCreds()
	if err != nil {
		return nil, fmt.Errorf("service credentials: %w", err)
	}
	opt, err := enroll.CredsOption(creds)
	if err != nil {
		return nil, fmt.Errorf("service credentials: %w", err)
	}
	return opt, nil
}

// natsLogger routes the embedded server's log to slog; its notices are
// debug, it is chatty at startup.
type natsLogger struct{ log *slog.Logger }

func (l natsLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l natsLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l natsLogger) Fatalf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l natsLogger) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l natsLogger) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l natsLogger) Tracef(format string, v ...any)  {}
