// Package controlplane is `outpost serve`: the HTTP API of API.md, the
// embedded nats-server with decentralized auth, state in JetStream KV,
// presence of agents and the auth of API callers.
package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/outposthq/outpost/wire"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/authority"
	"github.com/outposthq/outpost/console"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/secretfile"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/routing"
	"github.com/outposthq/outpost/rpc"
)

// Defaults of Config.
const (
	DefaultListen         = "127.0.0.1:7070"
	DefaultNATSListen     = "127.0.0.1:4222"
	DefaultPresenceWindow = 30 * time.Second
	// adminTokenFile is where a generated admin token is kept, mode 0600.
	adminTokenFile = "admin-token"
	// minAdminTokenLen is the shortest admin token accepted; a generated
	// one has 32 characters, 130 random bits.
	minAdminTokenLen = 32
	// maxAdminTokenFile bounds what is read of the admin token file.
	maxAdminTokenFile = 4 << 10
	startTimeout      = 30 * time.Second
	closeTimeout      = 5 * time.Second
)

// HTTP server timeouts; variables so that tests can shorten them.
var (
	// httpReadHeaderTimeout bounds the reading of a request's headers.
	httpReadHeaderTimeout = 10 * time.Second
	// httpIdleTimeout closes a keep-alive connection idle for this long.
	httpIdleTimeout = 120 * time.Second
	// unauthenticatedBodyTimeout bounds the reading of a request's body
	// while its sender is unknown: the whole body of a call that takes no
	// bearer token (POST /v1/enroll), and of any call whose token does not
	// check out. A client trickling bytes cannot hold a connection and its
	// goroutine longer. A known caller's body (an upload) takes the time it
	// takes.
	unauthenticatedBodyTimeout = 10 * time.Second
)

// Config configures a control plane. StateDir is required; every other zero
// value means its default.
type Config struct {
	// Listen is the HTTP address; default "127.0.0.1:7070". Port 0 picks one
	// (see URL).
	Listen string
	// StateDir holds the NATS authority, the embedded server's JetStream
	// store and the generated admin token. Required; made mode 0700 when
	// missing, and refused when its group or others have access.
	StateDir string
	// NATSListen is the embedded server's host:port; default
	// "127.0.0.1:4222". Port 0 picks one (see NATSURLs).
	NATSListen string
	// NATSURL, when set, is an external NATS (a cluster, comma-separated
	// URLs) to use instead of the embedded server. Its servers must trust
	// the authority under StateDir/auth, which PrepareExternal creates along
	// with the server configuration; every replica gets a copy of StateDir
	// and keeps no other state. The control plane connects as a user of the
	// authority's app account, or with the creds file NATSCreds when given.
	NATSURL   string
	NATSCreds string
	// KVReplicas is the replica count of the state buckets. Zero means 3
	// when the NATS cluster has three or more servers, else 1.
	KVReplicas int
	// AuditRetention is how long the copies of agents' audit events are
	// kept (30 days when zero).
	AuditRetention time.Duration
	// PublicNATSURLs is what POST /v1/enroll tells agents to connect to;
	// default the embedded server's client URL (or NATSURL).
	PublicNATSURLs []string
	// AdminToken is the admin bearer token, at least 32 characters. When
	// empty one is generated once into StateDir/admin-token (mode 0600) and
	// reused after a restart (see AdminTokenGenerated).
	AdminToken string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// SnapshotQuota bounds the bytes of snapshot content one workspace
	// keeps (chunks counted once however many snapshots share them);
	// default DefaultSnapshotQuota (20 GiB). A snapshot past it is 507
	// insufficient_storage/snapshot_quota.
	SnapshotQuota int64
	// PresenceWindow is how long a silent agent stays "reconnecting" before
	// it is "offline"; default 30 s.
	PresenceWindow time.Duration

	// TLSCertFile and TLSKeyFile make the API (and the native NATS port)
	// serve TLS with that certificate chain; see loadTLS for what is
	// pinned. TLSSelfSigned instead makes a CA and a certificate for those
	// host names and addresses under StateDir/tls. With TLS, agents reach
	// NATS over WebSocket on the API's port, at NATSPath.
	TLSCertFile, TLSKeyFile string
	TLSSelfSigned           []string
	// PublicURL is the URL users and agents reach the API at (behind a load
	// balancer, say); default the listener's own. Enrollment hands it out.
	PublicURL string
	// InsecurePlaintext allows a Listen address that is not loopback
	// without TLS: secrets and commands then cross the network in clear.
	InsecurePlaintext bool
	// PreviewDomain, when set, serves each preview link at
	// <token>.<PreviewDomain> (wildcard DNS and a certificate covering it
	// are the operator's): an origin of its own per link. Without it links
	// are served under /preview/ on the API's host, sandboxed (links.go).
	PreviewDomain string
	// DeviceInterval is the polling interval device login hands out
	// (whole seconds); default DefaultDeviceInterval.
	DeviceInterval time.Duration
	// AgentReleases, when set, is a directory of agent releases served to
	// agents for self-update: manifest.json, its signature
	// manifest.json.sig, and the binaries it names. Read on every check, so
	// a release dropped in takes effect without a restart.
	AgentReleases string
	// DeviceCodeTTL is how long a device code lives; default
	// DefaultDeviceCodeTTL, at most an hour.
	DeviceCodeTTL time.Duration
}

// Server is a control plane. New, then Start, then Close.
type Server struct {
	cfg     Config
	log     *slog.Logger
	handler http.Handler

	adminToken string
	adminHash  string
	// adminTokenGenerated: this Start generated the admin token.
	adminTokenGenerated bool

	// Set by Start.
	auth     *authority.Authority
	ns       *server.Server
	natsURL  string           // where our own connections go
	nc       *nats.Conn       // the app account: state
	agentNC  *nats.Conn       // the agents' account: requests, replies, presence
	audit    jetstream.Stream // the agents' audit events (audit.go)
	auditSub *nats.Subscription
	pipeNC   *nats.Conn // the agents' account: pipe frames (pipes.go)
	// storeNC is the app account's connection, in process, that chunk
	// publishes go on with the embedded server (nil with an external
	// one: they go on nc); storeMore are the others (storeConns in all).
	storeNC   *nats.Conn
	storeMore []*nats.Conn
	sysNC     *nats.Conn
	st        *store
	snaps     *snapStore
	// snapPubs publish chunks, async, each on a store connection of its
	// own (nc's JetStream alone with an external server); snapNext
	// picks the next pull batch's.
	snapPubs []jetstream.JetStream
	snapNext atomic.Uint32
	periodic *periodic // background snapshots
	presence *presence.Tracker
	rpc      *rpc.Client
	sessions *routing.Router
	httpSrv  *http.Server
	ln       net.Listener
	url      string
	pushMu   sync.Mutex // serializes account JWT pushes
	seen     *seenWriter
	keyUses  keyUses
	tls      *serverTLS     // nil: plaintext
	splices  sync.WaitGroup // forwarded ports' WebSocket connections
	admit    *admission     // agents' NATS connect exchanges over wss (admit.go)
	bulk     bulkHub        // tickets of bulk connections (bulk.go)

	limits        limiter         // device login's guessing limits
	pipes         *pipeHub        // connections to agents' ports (pipes.go)
	portTransport *http.Transport // the ports proxy's (ports.go)

	ready atomic.Bool // Start finished and Close not begun

	// afterChunkLookup, set by tests before any call, runs when a
	// snapshot has looked up which chunks the store holds.
	afterChunkLookup func()
	// afterChunkBatch, set by tests before any call, runs when a
	// snapshot has stored (and a carry forwarded) a batch of chunks.
	afterChunkBatch func()
	// beforeForward, set by tests before any call, runs as a carry's
	// forwarder is about to send a batch.
	beforeForward func()
	// beforeSnapRecord, set by tests before any call, runs as a snapshot
	// is about to be recorded; its error fails the record.
	beforeSnapRecord func() error
	// chunkListings counts the snapshots that listed every chunk of
	// their workspace's store (read by tests).
	chunkListings atomic.Int64
	// snapNoBulk, set by tests before any call, pulls every snapshot's
	// chunks over NATS (snapxfer.go's pullChunks).
	snapNoBulk bool
	// snapBulkWait, set by tests before any call, bounds one batch
	// pulled on a bulk connection (zero: fileCallTimeout, as one over
	// NATS).
	snapBulkWait time.Duration
	// natsOptions, set by tests before Start, adjusts the embedded
	// server's options (its stream ingest limits, say).
	natsOptions func(*server.Options)
	// storeQueue is the embedded server's bound on a stream's ingest
	// queue, in bytes (0: nats-server's default; chunksInFlight).
	storeQueue int64
	// chunkDrops counts the chunk publishes the store dropped, its
	// ingest queue full (read by tests).
	chunkDrops atomic.Int64
	// snapBulkFallbacks counts the pulls that went on over NATS after a
	// batch on a bulk connection failed (read by tests).
	snapBulkFallbacks atomic.Int64
	// prevChunks is each session's last snapshot's chunks (snapprev.go).
	prevChunks sessionChunks

	mu       sync.Mutex
	started  bool
	closed   bool
	serveWG  sync.WaitGroup
	stopOnce sync.Once
}

// New checks cfg and applies its defaults; nothing starts until Start.
func New(cfg Config) (*Server, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("controlplane: StateDir is required")
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.NATSListen == "" {
		cfg.NATSListen = DefaultNATSListen
	}
	if cfg.SnapshotQuota <= 0 {
		cfg.SnapshotQuota = DefaultSnapshotQuota
	}
	if cfg.PresenceWindow <= 0 {
		cfg.PresenceWindow = DefaultPresenceWindow
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NATSCreds != "" && cfg.NATSURL == "" {
		return nil, errors.New("controlplane: NATSCreds needs NATSURL")
	}
	for _, u := range cfg.PublicNATSURLs {
		if strings.TrimSpace(u) == "" {
			return nil, errors.New("controlplane: empty public NATS URL")
		}
	}
	s := &Server{cfg: cfg, log: cfg.Logger, admit: newAdmission(natsAdmitConcurrent)}
	s.handler = s.previewHost(s.routes())
	return s, nil
}

// Start brings everything up: the authority, the embedded NATS server,
// the service and system connections, the account JWT with current
// revocations, the KV buckets, presence and the HTTP listener. ctx bounds
// startup only. On an error everything started is stopped again.
func (s *Server) Start(ctx context.Context) (err error) {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return errors.New("controlplane: Start called twice or after Close")
	}
	s.started = true
	s.mu.Unlock()
	defer func() {
		if err != nil {
			s.shutdown()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()

	if err := os.MkdirAll(s.cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if err := checkStateDir(s.cfg.StateDir); err != nil {
		return err
	}
	if err := s.loadAdminToken(); err != nil {
		return err
	}
	if err := s.loadAuthority(); err != nil {
		return err
	}
	if err := s.loadTLS(); err != nil {
		return err
	}
	if s.cfg.NATSURL == "" {
		if err := s.startEmbeddedNATS(); err != nil {
			return err
		}
	}
	if err := s.connectNATS(); err != nil {
		return err
	}
	js, err := jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if err = s.startAudit(ctx, js); err != nil {
		return err
	}
	if s.st, err = openStore(ctx, js, s.kvReplicas()); err != nil {
		return err
	}
	if s.snaps, err = openSnapStore(ctx, js, s.kvReplicas(), s.cfg.SnapshotQuota, s.log.Warn); err != nil {
		return err
	}
	s.snapPubs = []jetstream.JetStream{js}
	if s.storeNC != nil {
		conns := append([]*nats.Conn{s.storeNC}, s.storeMore...)
		s.snapPubs = s.snapPubs[:0]
		for _, nc := range conns {
			pub, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(chunksInFlight(s.storeQueue, len(conns))))
			if err != nil {
				return fmt.Errorf("jetstream for the snapshot store: %w", err)
			}
			s.snapPubs = append(s.snapPubs, pub)
		}
	}
	// Tried again while a busy server lets it time out: after a restart a
	// fleet reconnecting at once keeps the embedded server's read loops
	// busy for seconds (2,000 agents on a loaded machine here), and one
	// timed-out push must not stop the control plane.
	if err := untilReady(ctx, s.pushAccounts); err != nil {
		return err
	}
	if err := s.startPresence(ctx); err != nil {
		return err
	}
	if s.rpc, err = rpc.New(rpc.Config{Conn: s.agentNC, Presence: s.presence}); err != nil {
		return fmt.Errorf("rpc client: %w", err)
	}
	if err := s.startSessions(); err != nil {
		return err
	}
	if s.pipes, err = newPipeHub(s.pipeNC, s.presence); err != nil {
		return err
	}
	s.portTransport = s.newPortTransport()
	s.startPeriodic()
	s.ready.Store(true)
	return s.startHTTP()
}

func (s *Server) startHTTP() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("http listen: %w", err)
	}
	scheme := "http"
	if s.tls != nil {
		ln, scheme = tls.NewListener(gatherListener{ln}, s.tls.config()), "https"
	}
	s.ln = ln
	s.url = scheme + "://" + ln.Addr().String()
	s.httpSrv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		IdleTimeout:       httpIdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		ConnContext:       gatherContext,
	}
	s.serveWG.Add(1)
	go func() {
		defer s.serveWG.Done()
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "err", err)
		}
	}()
	s.log.Info("control plane listening", "url", s.url, "public", s.PublicURL(), "nats", s.NATSURLs())
	return nil
}

// loadTLS sets the TLS identity from the config, and refuses to serve in
// clear on an address other machines can reach unless told to.
func (s *Server) loadTLS() error {
	var err error
	switch {
	case s.cfg.TLSCertFile != "" || s.cfg.TLSKeyFile != "":
		if s.cfg.TLSCertFile == "" || s.cfg.TLSKeyFile == "" || len(s.cfg.TLSSelfSigned) > 0 {
			return errors.New("tls: give --tls-cert and --tls-key together, or --tls-self-signed alone")
		}
		s.tls, err = loadTLS(s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
	case len(s.cfg.TLSSelfSigned) > 0:
		s.tls, err = selfSignedTLS(s.cfg.StateDir, s.cfg.TLSSelfSigned)
	case !isLoopback(s.cfg.Listen) && !s.cfg.InsecurePlaintext:
		return fmt.Errorf("listen %s: an address other machines can reach needs TLS (--tls-cert/--tls-key or --tls-self-signed HOST); --insecure-plaintext serves in clear anyway", s.cfg.Listen)
	}
	return err
}

// isLoopback reports whether addr's host is a loopback address or localhost.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// PublicURL is the API's URL as users and agents reach it: Config.PublicURL,
// else the listener's.
func (s *Server) PublicURL() string {
	if s.cfg.PublicURL != "" {
		return strings.TrimRight(s.cfg.PublicURL, "/")
	}
	return s.url
}

// CAFile is where a CA made by TLSSelfSigned is kept (PEM), for clients to
// trust (OUTPOST_CA_FILE); "" for any other TLS setup.
func (s *Server) CAFile() string {
	if len(s.cfg.TLSSelfSigned) == 0 {
		return ""
	}
	return filepath.Join(s.cfg.StateDir, tlsDir, caCertFile)
}

// CASHA256 is the hex SHA-256 of the CA agents must pin ("" when the API is
// plaintext or its chain is publicly trusted).
func (s *Server) CASHA256() string { return s.tls.caSHA256() }

// URL is the base URL the HTTP API listens on, e.g. "http://127.0.0.1:7070".
func (s *Server) URL() string { return s.url }

// NATSURLs is what enrolled agents are told to connect to: with TLS on the
// embedded server, NATS over WebSocket on the API's own port
// (wss://<public host>/v1/nats).
func (s *Server) NATSURLs() []string {
	if len(s.cfg.PublicNATSURLs) > 0 {
		return append([]string(nil), s.cfg.PublicNATSURLs...)
	}
	if s.tls != nil && s.ns != nil {
		if u, err := url.Parse(s.PublicURL()); err == nil && u.Host != "" {
			return []string{"wss://" + u.Host + NATSPath}
		}
	}
	if s.cfg.NATSURL != "" {
		return strings.Split(s.cfg.NATSURL, ",")
	}
	if s.natsURL == "" {
		return nil
	}
	return []string{s.natsURL}
}

// AdminToken is the admin bearer token (known after Start).
func (s *Server) AdminToken() string { return s.adminToken }

// AdminTokenGenerated reports whether Start generated the admin token (into
// AdminTokenFile): the one time to show it.
func (s *Server) AdminTokenGenerated() bool { return s.adminTokenGenerated }

// AdminTokenFile is where the admin token is kept when none is configured.
func (s *Server) AdminTokenFile() string { return filepath.Join(s.cfg.StateDir, adminTokenFile) }

// Handler is the HTTP API, for serving it elsewhere (httptest) or in-process.
// It needs a started server.
func (s *Server) Handler() http.Handler { return s.handler }

// Close stops everything Start started: HTTP (in-flight requests get a few
// seconds), presence, the NATS connections (drained) and the embedded
// server. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.shutdown()
	return nil
}

// shutdown stops what Start started, once: a failed Start and a later
// Close both call it.
func (s *Server) shutdown() { s.stopOnce.Do(s.stop) }

func (s *Server) stop() {
	s.ready.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if s.httpSrv != nil {
		if err := s.httpSrv.Shutdown(ctx); err != nil {
			_ = s.httpSrv.Close()
		}
		s.serveWG.Wait()
	} else if s.ln != nil {
		_ = s.ln.Close()
	}
	s.keyUses.close()
	if s.pipes != nil {
		s.pipes.close() // ends the port streams, hijacked, that Shutdown does not wait for
	}
	if s.portTransport != nil {
		s.portTransport.CloseIdleConnections()
	}
	s.stopPeriodic()
	if s.seen != nil {
		s.seen.close(ctx)
	}
	if s.auditSub != nil {
		_ = s.auditSub.Unsubscribe()
	}
	if s.presence != nil {
		s.presence.Close()
	}
	if s.st != nil {
		s.st.close()
	}
	if s.rpc != nil {
		_ = s.rpc.Close()
	}
	for _, nc := range append([]*nats.Conn{s.pipeNC, s.agentNC, s.storeNC, s.nc}, s.storeMore...) {
		if nc != nil {
			drainAndWait(nc, closeTimeout)
		}
	}
	if s.sysNC != nil {
		drainAndWait(s.sysNC, closeTimeout)
	}
	if s.ns != nil {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	}
	s.splices.Wait() // they end with the server's connections

}

func drainAndWait(nc *nats.Conn, timeout time.Duration) {
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if err := nc.Drain(); err != nil {
		nc.Close()
		return
	}
	select {
	case <-closed:
	case <-time.After(timeout):
		nc.Close()
	}
}

// loadAdminToken sets the admin token: the configured one, else the one in
// StateDir/admin-token (owner-only), else a new one written there. A token
// shorter than minAdminTokenLen is refused.
func (s *Server) loadAdminToken() error {
	tok := s.cfg.AdminToken
	if tok != "" && len(tok) < minAdminTokenLen {
		return fmt.Errorf("the admin token (OUTPOST_ADMIN_TOKEN) has %d characters, at least %d are needed; set a longer one, or none to have one generated", len(tok), minAdminTokenLen)
	}
	if tok == "" {
		path := s.AdminTokenFile()
		b, err := secretfile.Read(path, maxAdminTokenFile)
		switch {
		case err == nil:
			tok = strings.TrimSpace(string(b))
			if tok == "" {
				return fmt.Errorf("admin token file %s is empty", path)
			}
			if len(tok) < minAdminTokenLen {
				return fmt.Errorf("admin token in %s has %d characters, at least %d are needed; write a longer one, or remove the file to have one generated", path, len(tok), minAdminTokenLen)
			}
		case errors.Is(err, os.ErrNotExist) && s.cfg.NATSURL != "":
			// Replicas must share one token: generating one each would
			// make them disagree.
			return fmt.Errorf("no admin token: set OUTPOST_ADMIN_TOKEN or prepare %s with `outpost nats-config`", s.cfg.StateDir)
		case errors.Is(err, os.ErrNotExist):
			tok = "opadm_" + rand.Text()
			if err := writeNewFile(path, []byte(tok+"\n"), 0o600); err != nil {
				return fmt.Errorf("write admin token: %w", err)
			}
			s.adminTokenGenerated = true
		default:
			return fmt.Errorf("admin token: %w", err)
		}
	}
	s.adminToken = tok
	s.adminHash = enroll.HashToken(tok)
	return nil
}

// writeNewFile creates path (which must not exist) with data and perm.
func writeNewFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

var _ io.Closer = (*Server)(nil)

// routes is the HTTP API of API.md.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	s.handle(mux, "GET /healthz", public, s.handleHealth)
	s.handle(mux, "POST /v1/enroll", public, s.handleEnroll)
	s.handle(mux, "POST /v1/device/code", public, s.handleDeviceCode)
	s.handle(mux, "POST /v1/device/token", public, s.handleDeviceToken)
	s.handle(mux, "POST /v1/workspaces/{ws}/device-approvals", inWorkspace, s.handleDeviceApproval)
	s.handle(mux, "GET /v1/agent-releases/latest", public, s.handleLatestRelease)
	s.handle(mux, "GET /v1/agent-releases/files/{name}", public, s.handleReleaseFile)
	s.handle(mux, "PATCH /v1/workspaces/{ws}", inWorkspace, s.handlePatchWorkspace)
	s.handle(mux, "GET /v1/workspaces/{ws}/device-approvals/{code}", inWorkspace, s.handleGetDeviceApproval)

	s.handle(mux, "POST /v1/workspaces", adminOnly, s.handleCreateWorkspace)
	s.handle(mux, "GET /v1/workspaces/{ws}", inWorkspace, s.handleGetWorkspace)
	s.handle(mux, "POST /v1/workspaces/{ws}/keys", adminOnly, s.handleCreateKey)
	s.handle(mux, "GET /v1/workspaces/{ws}/keys", adminOnly, s.handleListKeys)
	s.handle(mux, "DELETE /v1/workspaces/{ws}/keys/{id}", adminOnly, s.handleDeleteKey)
	s.handle(mux, "POST /v1/workspaces/{ws}/enrollment-tokens", inWorkspace, s.handleCreateEnrollmentToken)
	s.handle(mux, "GET /v1/workspaces/{ws}/enrollment-tokens", inWorkspace, s.handleListEnrollmentTokens)
	s.handle(mux, "DELETE /v1/workspaces/{ws}/enrollment-tokens/{id}", inWorkspace, s.handleDeleteEnrollmentToken)

	s.handle(mux, "GET /v1/workspaces/{ws}/agents", inWorkspace, s.handleListAgents)
	s.handle(mux, "GET /v1/workspaces/{ws}/agents/{agent}", inWorkspace, s.handleGetAgent)
	s.handle(mux, "DELETE /v1/workspaces/{ws}/agents/{agent}", inWorkspace, s.handleRevokeAgent)

	s.handle(mux, "POST /v1/workspaces/{ws}/sessions", inWorkspace, s.handleCreateSession)
	s.handle(mux, "GET /v1/workspaces/{ws}/sessions", inWorkspace, s.handleListSessions)
	s.handle(mux, "GET /v1/workspaces/{ws}/audit", inWorkspace, s.handleAudit)
	s.handle(mux, "GET /v1/workspaces/{ws}/sessions/{session}", inWorkspace, s.handleGetSession)
	s.handle(mux, "POST /v1/workspaces/{ws}/sessions/{session}/swap", inWorkspace, s.handleSwapSession)
	s.handle(mux, "DELETE /v1/workspaces/{ws}/sessions/{session}", inWorkspace, s.handleDeleteSession)

	// Target operations, each under every target prefix.
	s.handleTarget(mux, "POST", "/exec", s.handleExec)
	s.handleTarget(mux, "GET", "/capabilities", s.handleCapabilities)
	s.routeProcesses(mux)
	s.routeFiles(mux)
	s.routeArchive(mux)
	s.routeSnapshots(mux)
	s.routeSearch(mux)
	s.routeWatch(mux)
	s.routeGit(mux)
	s.routePorts(mux)
	mux.HandleFunc("GET "+NATSPath, s.handleNATS)
	mux.HandleFunc("GET "+wire.BulkPath, s.handleBulk)
	// The web console: GET /, GET /device and GET /console/...; a client
	// of the routes above only.
	console.Register(mux)
	return errorMux{mux: mux, log: s.log}
}
