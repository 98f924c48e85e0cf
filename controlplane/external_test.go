package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/outposthq/outpost/internal/natstest"
	"github.com/outposthq/outpost/wire"
)

// TestPrepareExternalKeepsItsSecrets: preparing again (one config per
// server) keeps the authority and the admin token, so every server trusts
// the same operator and every replica accepts the same token.
func TestPrepareExternalKeepsItsSecrets(t *testing.T) {
	dir := t.TempDir()
	first, err := PrepareExternal(dir, NATSConfig{ServerName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	tok1, _ := os.ReadFile(filepath.Join(dir, adminTokenFile))
	second, err := PrepareExternal(dir, NATSConfig{ServerName: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	tok2, _ := os.ReadFile(filepath.Join(dir, adminTokenFile))
	if len(tok1) == 0 || string(tok1) != string(tok2) {
		t.Fatalf("admin token changed: %q then %q", tok1, tok2)
	}
	// The operator's JWT is issued anew by each run (its iat, in seconds):
	// the two must name the same operator key.
	if op1, op2 := operatorKey(t, first), operatorKey(t, second); op1 != op2 {
		t.Fatalf("the two configs trust different operators: %s then %s", op1, op2)
	}
	for _, f := range []string{adminTokenFile, "auth/operator.nk", "auth/account.nk", "auth/system-account.nk"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(second), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := server.ProcessConfigFile(path); err != nil {
		t.Fatalf("nats-server rejects the config: %v\n%s", err, second)
	}
}

// operatorKey is the public key of the operator whose JWT conf trusts.
func operatorKey(t *testing.T, conf string) string {
	t.Helper()
	for _, l := range strings.Split(conf, "\n") {
		if q, ok := strings.CutPrefix(l, "operator: "); ok {
			token, err := strconv.Unquote(q)
			if err != nil {
				t.Fatalf("operator line %q: %v", l, err)
			}
			oc, err := jwt.DecodeOperatorClaims(token)
			if err != nil {
				t.Fatalf("operator JWT: %v", err)
			}
			return oc.Subject
		}
	}
	t.Fatalf("no operator line in the config:\n%s", conf)
	return ""
}

// TestReplicaRefusesToInventState: on an external NATS a replica with no
// authority (or no admin token) fails with what to do, and creates nothing.
func TestReplicaRefusesToInventState(t *testing.T) {
	ns := natstest.Start(t)
	for _, tc := range []struct {
		name, want string
		prepare    func(dir string)
	}{
		{"no authority", "outpost nats-config", func(string) {}},
		{"no admin token", "no admin token", func(dir string) {
			if _, err := PrepareExternal(dir, NATSConfig{}); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, adminTokenFile))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := stateDir(t)
			tc.prepare(dir)
			before := listFiles(t, dir)
			s, err := New(Config{StateDir: dir, NATSURL: ns.ClientURL(), Listen: "127.0.0.1:0", Logger: testLogger()})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Start(context.Background())
			if err == nil {
				s.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			if after := listFiles(t, dir); after != before {
				t.Fatalf("state dir changed from %q to %q", before, after)
			}
		})
	}
}

func listFiles(t *testing.T, dir string) string {
	var names []string
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		names = append(names, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, ",")
}

// The tls and websocket blocks nats-config prints load in nats-server and
// configure what they say.
func TestNATSConfigTLSAndWebsocket(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := selfSignedTLS(dir, []string{"nats.example"})
	if err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, tlsDir, serverCert), filepath.Join(dir, tlsDir, serverKeyFile)
	for _, tt := range []struct {
		name          string
		c             NATSConfig
		wantTLS, wsOn bool
		wsTLS         bool
	}{
		{"plain", NATSConfig{}, false, false, false},
		{"tls and websocket", NATSConfig{TLSCert: cert, TLSKey: key, WebsocketListen: "127.0.0.1:8443"}, true, true, true},
		{"websocket behind a proxy", NATSConfig{WebsocketListen: "127.0.0.1:8443"}, false, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conf, err := PrepareExternal(filepath.Join(t.TempDir(), "state"), tt.c)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "nats.conf")
			if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			opts, err := server.ProcessConfigFile(path)
			if err != nil {
				t.Fatalf("the printed config does not load: %v\n%s", err, conf)
			}
			if opts.PingInterval != wire.PingInterval || opts.MaxPingsOut != wire.MaxPingsOut {
				t.Errorf("pings every %v, %d unanswered; want the agents' %v, %d\n%s", opts.PingInterval, opts.MaxPingsOut, wire.PingInterval, wire.MaxPingsOut, conf)
			}
			if (opts.TLSConfig != nil) != tt.wantTLS {
				t.Errorf("client TLS %v, want %v\n%s", opts.TLSConfig != nil, tt.wantTLS, conf)
			}
			if (opts.Websocket.Port != 0) != tt.wsOn || tt.wsOn && (opts.Websocket.TLSConfig != nil) != tt.wsTLS || tt.wsOn && opts.Websocket.NoTLS == tt.wsTLS {
				t.Errorf("websocket %+v, want on %v tls %v\n%s", opts.Websocket, tt.wsOn, tt.wsTLS, conf)
			}
		})
	}
}
