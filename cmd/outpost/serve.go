//go:build !agent

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/outposthq/outpost/controlplane"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "--listen ADDR --state-dir DIR [--tls-cert FILE --tls-key FILE | --tls-self-signed HOSTS] [--public-url URL] [--insecure-plaintext] [--nats-listen ADDR] [--nats-url URLS [--nats-creds FILE] [--kv-replicas N]] [--public-nats-url URLS] [--agent-releases DIR] [--snapshot-quota SIZE] [--pprof ADDR]", stderr)
	listen := fs.String("listen", "127.0.0.1:7070", "HTTP listen address")
	stateDir := fs.String("state-dir", "", "directory for state (required)")
	natsListen := fs.String("nats-listen", "127.0.0.1:4222", "embedded NATS listen address")
	natsURL := fs.String("nats-url", "", "external NATS URLs (comma-separated); no embedded server then")
	natsCreds := fs.String("nats-creds", "", "credentials file for the external NATS")
	publicNATS := fs.String("public-nats-url", "", "NATS URLs given to enrolling agents (comma-separated)")
	kvReplicas := fs.Int("kv-replicas", 0, "replicas of the state buckets (default 3 on a cluster of 3 or more servers, else 1)")
	pprofAddr := fs.String("pprof", "", "serve Go profiles (/debug/pprof/) on this address; unauthenticated, keep it on loopback")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this certificate chain (PEM)")
	tlsKey := fs.String("tls-key", "", "the private key of --tls-cert (PEM)")
	selfSigned := fs.String("tls-self-signed", "", "make a CA and a certificate for these host names/addresses (comma-separated) in the state dir, and serve HTTPS with it")
	publicURL := fs.String("public-url", "", "the URL users and agents reach the API at (default the listener's)")
	previewDomain := fs.String("preview-domain", "", "serve preview links at https://TOKEN.DOMAIN, an origin each (wildcard DNS and certificate are yours); default: under /preview/ on the API's host, sandboxed")
	releases := fs.String("agent-releases", "", "serve agent releases from this directory (manifest.json, manifest.json.sig and the binaries; see 'outpost release')")
	quota := fs.String("snapshot-quota", "20GiB", "the most snapshot content one workspace keeps (chunks counted once), bytes or with a KiB|MiB|GiB|TiB suffix")
	insecure := fs.Bool("insecure-plaintext", false, "allow a --listen address other machines can reach without TLS (everything crosses the network in clear)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 0, "no arguments"); err != nil {
		return err
	}
	if *stateDir == "" {
		return fmt.Errorf("--state-dir is required")
	}
	snapQuota, err := parseSize(*quota)
	if err != nil {
		return fmt.Errorf("--snapshot-quota: %w", err)
	}
	if err := checkListen(*listen, "--listen"); err != nil {
		return err
	}
	if *natsURL == "" {
		if err := checkListen(*natsListen, "--nats-listen"); err != nil {
			return err
		}
	}
	srv, err := controlplane.New(controlplane.Config{
		Listen:         *listen,
		StateDir:       *stateDir,
		NATSListen:     *natsListen,
		NATSURL:        *natsURL,
		NATSCreds:      *natsCreds,
		PublicNATSURLs: splitList(*publicNATS),
		KVReplicas:     *kvReplicas,
		AdminToken:     os.Getenv("OUTPOST_ADMIN_TOKEN"),
		Logger:         slog.New(slog.NewTextHandler(stderr, nil)),

		TLSCertFile:       *tlsCert,
		TLSKeyFile:        *tlsKey,
		TLSSelfSigned:     splitList(*selfSigned),
		PublicURL:         *publicURL,
		PreviewDomain:     *previewDomain,
		InsecurePlaintext: *insecure,
		AgentReleases:     *releases,
		SnapshotQuota:     snapQuota,
	})
	if err != nil {
		return err
	}
	// Profiles from before Start: what a slow start (a fleet reconnecting
	// at once) spends its time on is worth seeing too.
	if *pprofAddr != "" {
		if err := servePprof(ctx, *pprofAddr, func() any { return srv.Stats() }, stderr); err != nil {
			return err
		}
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(stdout, "outpost control plane listening on %s\nNATS for agents: %s\n", srv.PublicURL(), strings.Join(srv.NATSURLs(), ","))
	if pin := srv.CASHA256(); pin != "" {
		fmt.Fprintf(stdout, "CA fingerprint (agents pin it; enrollment tokens carry it): %s\nclients: export OUTPOST_URL=%s OUTPOST_CA_FILE=%s\n", pin, srv.PublicURL(), srv.CAFile())
	}
	printAdminToken(stdout, srv)
	<-ctx.Done()
	fmt.Fprintln(stderr, "shutting down")
	return nil
}

// parseSize reads a positive byte count: digits, optionally followed by
// KiB, MiB, GiB or TiB (powers of 1024; K, M, G, T and KB… mean the same).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(s)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive size (say 500MiB or 20GiB)", s)
	}
	shift := map[string]uint{"": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20,
		"g": 30, "gb": 30, "gib": 30, "t": 40, "tb": 40, "tib": 40}
	sh, ok := shift[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit (use KiB, MiB, GiB or TiB)", s)
	}
	if n > (1<<63-1)>>sh {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n << sh, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// printAdminToken says where the admin token is. A generated one is printed
// once, on the start that generates it; later starts name its file.
func printAdminToken(w io.Writer, srv *controlplane.Server) {
	switch {
	case srv.AdminTokenGenerated():
		fmt.Fprintf(w, "admin token (generated, shown only now; kept in %s):\n%s\n", srv.AdminTokenFile(), srv.AdminToken())
	case os.Getenv("OUTPOST_ADMIN_TOKEN") != "":
		fmt.Fprintln(w, "admin token: $OUTPOST_ADMIN_TOKEN")
	default:
		fmt.Fprintf(w, "admin token: in %s\n", srv.AdminTokenFile())
	}
}
