package controlplane

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Embedded NATS settings.
const (
	// ownPingInterval is the pings of the control plane's own connections
	// to the embedded server, which runs in this process: no link can go
	// half-open there, and the server answers a ping under its server
	// lock, which thousands of agents connecting at once keep busy. With
	// 2 s pings the control plane declared its own connections stale
	// while 10,000 agents connected, and its reconnects queued behind the
	// same lock (issue 20).
	ownPingInterval = 30 * time.Second
	// ownMaxPingsOut is how many of its own pings a control plane
	// connection leaves unanswered before it reconnects: two, so that a
	// server slowed by a storm of connects gets two intervals to answer
	// (on an external cluster, whose link can go half-open, 10–15 s).
	ownMaxPingsOut = 2
	// natsMaxPayload fits a default exec reply (two 1 MiB streams) in one
	// message.
	natsMaxPayload = 8 << 20
	natsReadyWait  = 10 * time.Second
	// natsConnectTimeout bounds one attempt of the control plane's own
	// connections (nats.go's default is 2 s) and natsConnectWait all of
	// them: a control plane restarted under a fleet that reconnects at
	// once (thousands of agents) finds its server busy for seconds with
	// their connects, and must wait that out rather than exit.
	natsConnectTimeout = 5 * time.Second
	natsConnectWait    = time.Minute
	// quietPingInterval is how often the embedded server looks at each
	// client when every agent reaches it over wss, which handleNATS
	// watches itself (agentSilence): nats-server's default, a backstop.
	quietPingInterval = 2 * time.Minute
)

// startEmbeddedNATS starts the embedded server: JetStream under StateDir,
// decentralized auth by the authority. It does not listen yet: connectNATS
// opens cfg.NATSListen (listenNATS) and connects the control plane at
// once, ahead of the agents. Restarted under a fleet that reconnects at
// once, a server that listened from the start was busy for seconds with
// the agents' connects (each one's JWT is checked under the server's
// lock) by the time the control plane connected: its connects, queued
// among them, missed the server's 2 s handshake window, and it took 13–28 s
// to come up with 2,000 agents, or exited.
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
		PingInterval: s.serverPingInterval(),
		MaxPingsOut:  wire.MaxPingsOut,
		MaxPayload:   natsMaxPayload,
		NoSigs:       true,
		DontListen:   true, // until listenNATS
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
	if s.natsOptions != nil {
		s.natsOptions(opts)
	}
	s.storeQueue = opts.StreamMaxBufferedSize
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
	return nil
}

// listenNATS opens the embedded server's client port (cfg.NATSListen) and
// sets the URL of our own connections (loopback when it listens on every
// interface; the port actually bound when it was 0).
func (s *Server) listenNATS() error {
	s.ns.AcceptLoop(make(chan struct{})) // returns once it listens (or failed to)
	addr, ok := s.ns.Addr().(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("embedded nats: cannot listen on %s", s.cfg.NATSListen)
	}
	host, _, _ := net.SplitHostPort(s.cfg.NATSListen)
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "nats://"
	if s.nativeTLS() {
		scheme = "tls://"
	}
	s.natsURL = scheme + net.JoinHostPort(host, strconv.Itoa(addr.Port))
	return nil
}

// serverPingInterval is how often the embedded server looks at each
// client it has not heard from, to ping it or to close it as stale. Each
// look costs a timer, a goroutine and a few allocations per client: at
// 10,000 agents and the agents' own interval, 2,000 a second and a third
// of serve's allocation at idle (issue 20, BENCHMARKS.md). When agents can
// reach the server only through handleNATS (it listens on loopback and
// enrollment hands out WebSocket URLs alone), handleNATS notices a silent
// agent itself and the server looks at nats-server's default interval.
// Otherwise it looks at the agents' interval: their pings spare it its
// own, and a half-open link on the native port is noticed within 15 s.
func (s *Server) serverPingInterval() time.Duration {
	if s.tls == nil || !isLoopback(s.cfg.NATSListen) {
		return wire.PingInterval
	}
	for _, u := range s.cfg.PublicNATSURLs {
		if !strings.HasPrefix(u, "wss://") && !strings.HasPrefix(u, "ws://") {
			return wire.PingInterval
		}
	}
	return quietPingInterval
}

// nativeTLS reports whether the embedded server's native port serves TLS:
// with TLS configured, when it listens where other machines can reach it.
func (s *Server) nativeTLS() bool {
	return s.tls != nil && s.cfg.NATSURL == "" && !isLoopback(s.cfg.NATSListen)
}

// connectNATS opens the control plane's connections: the service
// connection (its state, in the app account), the agents connection (its
// user in the agents' account: requests, replies and presence), the
// system connection that pushes account JWTs, the pipes' connection and,
// with the embedded server, the snapshot store's. With the embedded
// server it opens the server's port first (see listenNATS).
func (s *Server) connectNATS() error {
	ping := wire.PingInterval
	if s.ns != nil {
		ping = ownPingInterval
	}
	common := []nats.Option{
		nats.MaxReconnects(-1),
		nats.PingInterval(ping),
		nats.MaxPingsOutstanding(ownMaxPingsOut),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				s.log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { s.log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted()) }),
	}
	// The pipes' connection, in process, takes no TLS (below).
	inProcess := common
	if s.nativeTLS() {
		// The native port requires TLS of every client, ours too.
		common = append(common[:len(common):len(common)], nats.Secure(s.tls.clientConfig()))
	}
	svcCreds, err := s.serviceCreds()
	if err != nil {
		return err
	}
	svc := append([]nats.Option{
		nats.Name("outpost-controlplane"),
		nats.CustomInboxPrefix(subjects.ControlPlaneInboxPrefix),
		// A request buffered during an outage could run long after its
		// caller gave up: fail fast instead.
		nats.ReconnectBufSize(-1),
		svcCreds,
	}, common...)
	agentCreds, err := s.auth.AgentsServiceCreds()
	if err != nil {
		return fmt.Errorf("agents credentials: %w", err)
	}
	agentOpt, err := enroll.CredsOption(agentCreds)
	if err != nil {
		return fmt.Errorf("agents credentials: %w", err)
	}
	agents := append([]nats.Option{
		nats.Name("outpost-controlplane-agents"),
		nats.ReconnectBufSize(-1), // as for the service connection
		agentOpt,
	}, common...)
	// The system connection pushes account JWTs (revocations), on the
	// embedded server and on an external one that trusts the authority.
	sysCreds, err := s.auth.SystemCreds()
	if err != nil {
		return fmt.Errorf("system credentials: %w", err)
	}
	sysOpt, err := enroll.CredsOption(sysCreds)
	if err != nil {
		return fmt.Errorf("system credentials: %w", err)
	}
	sys := append([]nats.Option{nats.Name("outpost-controlplane-system"), sysOpt}, common...)
	// Pipe frames (forwarded ports) travel on a connection of their own:
	// megabytes of them in flight must not hold up the presence events
	// and replies on the agents' connection.
	pipes := append([]nats.Option{
		nats.Name("outpost-controlplane-pipes"),
		nats.ReconnectBufSize(-1),
		agentOpt,
	}, common...)
	if s.ns != nil {
		// With the embedded server, in process: every forwarded byte
		// crosses this connection, and a loopback socket would cost two
		// syscalls and two copies more per read than a memory pipe. No
		// TLS inside the process (the server does not ask it of
		// in-process clients; Secure would wrap the pipe in TLS anyway).
		pipes = append([]nats.Option{
			nats.Name("outpost-controlplane-pipes"),
			nats.ReconnectBufSize(-1),
			agentOpt,
			nats.InProcessServer(s.ns),
		}, inProcess...)
	}

	// The snapshot store's chunk publishes (snapxfer.go) travel on a
	// connection of their own, in process with the embedded server: a
	// first carry writes every byte of the tree into JetStream, and over
	// a loopback socket each of them cost the kernel a copy in, a copy
	// out and the TCP work between. Cluster mode (an external server)
	// publishes on the service connection as before.
	var store []nats.Option
	if s.ns != nil {
		store = append([]nats.Option{
			nats.Name("outpost-controlplane-store"),
			nats.CustomInboxPrefix(subjects.ControlPlaneInboxPrefix),
			nats.ReconnectBufSize(-1), // as for the service connection
			svcCreds,
			nats.InProcessServer(s.ns),
		}, inProcess...)
	}

	url := s.cfg.NATSURL
	inProcURL := url
	if s.ns != nil {
		if err := s.listenNATS(); err != nil {
			return err
		}
		url = s.natsURL
		// The pipes' and the store's connections are in process,
		// without TLS even when the native port asks it (a tls:// URL
		// would make nats.go run TLS over the memory pipe, against no
		// CA it trusts).
		inProcURL = "nats://" + strings.TrimPrefix(strings.TrimPrefix(url, "tls://"), "nats://")
	}
	dials := []natsDial{
		{"at " + url, url, svc, &s.nc},
		{"as the agents' control-plane user", url, agents, &s.agentNC},
		{"as the system user", url, sys, &s.sysNC},
		{"for pipes", inProcURL, pipes, &s.pipeNC},
	}
	if store != nil {
		dials = append(dials, natsDial{"for the snapshot store", inProcURL, store, &s.storeNC})
		s.storeMore = make([]*nats.Conn, storeConns-1)
		for i := range s.storeMore {
			// Options of its own: connectBusy appends to them.
			dials = append(dials, natsDial{"for the snapshot store", inProcURL, slices.Clone(store), &s.storeMore[i]})
		}
	}
	// All at once, right after the port opened: ahead of a fleet that
	// reconnects at once.
	errs := make([]error, len(dials))
	var wg sync.WaitGroup
	for i, d := range dials {
		wg.Add(1)
		go func() {
			defer wg.Done()
			*d.conn, errs[i] = s.connectBusy(d.url, d.opts...)
		}()
	}
	wg.Wait()
	for i, d := range dials {
		if errs[i] != nil {
			return fmt.Errorf("connect to nats %s: %w", d.what, errs[i])
		}
	}
	return nil
}

// natsDial is one of the control plane's NATS connections to open: what
// it is (for errors), where, with which options, and the field it goes in.
type natsDial struct {
	what string
	url  string
	opts []nats.Option
	conn **nats.Conn
}

// connectBusy connects to url, trying again for up to natsConnectWait
// while the server accepts the connection but fails to complete the
// handshake: an external server busy with a reconnect storm times out, or
// pings before it answers. A server that refuses the connection, or the
// credentials, ends it at once.
func (s *Server) connectBusy(url string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append(opts, nats.Timeout(natsConnectTimeout))
	deadline := time.Now().Add(natsConnectWait)
	authTries := 0
	for {
		nc, err := nats.Connect(url, opts...)
		if s.ns != nil && isAuthError(err) && authTries < embeddedAuthRetries {
			// The embedded server, seconds old, once refused the
			// control plane's own fresh credentials (seen in CI:
			// TestAgentPresence, "Authorization Violation"; the
			// cause is not found). Its own credentials cannot be
			// wrong: ask again, a few times.
			authTries++
			s.log.Warn("the embedded nats refused the control plane's own credentials; connecting again", "url", url, "err", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err == nil || isAuthError(err) || errors.Is(err, nats.ErrNoServers) || time.Now().After(deadline) {
			return nc, err
		}
		s.log.Warn("nats did not complete the handshake (busy?); connecting again", "url", url, "err", err)
		time.Sleep(100 * time.Millisecond)
	}
}

// embeddedAuthRetries bounds connectBusy's retries of an auth error from
// the embedded server.
const embeddedAuthRetries = 3

func isAuthError(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) ||
		errors.Is(err, nats.ErrNkeysNotSupported)
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
