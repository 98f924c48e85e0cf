// Package redteam attacks a real control plane with a real enrolled agent's
// credentials, as a hostile tenant would, and fails if any attack gets
// through. Every attack carries a unique marker; watchers subscribed to
// everything in every NATS account report the marker wherever it lands, so an
// attack that reached anything outside the attacker's own subjects is seen,
// whatever the route.
package redteam

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/authority"
	"github.com/outposthq/outpost/controlplane"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
)

// Fixed waits: generous, so a loaded machine does not flake.
const (
	waitLong    = 10 * time.Second
	quietPeriod = 300 * time.Millisecond // how long "nothing arrives" is watched
	pollEvery   = 20 * time.Millisecond
	markerTag   = "redteam-"
)

var (
	attackerID  = subjects.Agent{Workspace: "wsa", ID: "a1"}
	neighbourID = subjects.Agent{Workspace: "wsa", ID: "a2"}
	victimID    = subjects.Agent{Workspace: "wsb", ID: "b1"}
)

// world is a control plane with two workspaces: the attacker's (wsa, with
// a neighbour agent) and the victim's (wsb), each victim a real agent
// serving a real directory.
type world struct {
	cp       *controlplane.Server
	admin    *client.Client
	stateDir string
	log      *syncBuffer

	attacker *enroll.Config // enrolled, not running: the attacker drives it by hand
	victims  map[subjects.Agent]*victim

	mu    sync.Mutex
	seen  []sighting // every message carrying a marker, wherever it landed
	conns []*nats.Conn
}

type victim struct {
	root     string
	instance string
	hostname string
	done     chan error // Run's result: the daemon stopped
}

// sighting is a message carrying a marker, seen by a watcher.
type sighting struct {
	account, subject string
	data             []byte
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{stateDir: t.TempDir(), log: &syncBuffer{}, victims: map[subjects.Agent]*victim{}}
	if err := os.Chmod(w.stateDir, 0o700); err != nil { // a state dir is its owner's only
		t.Fatal(err)
	}
	cp, err := controlplane.New(controlplane.Config{
		Listen: "127.0.0.1:0", NATSListen: "127.0.0.1:0", StateDir: w.stateDir,
		Logger: slog.New(slog.NewTextHandler(w.log, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := cp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Close() })
	w.cp, w.admin = cp, client.New(cp.URL(), cp.AdminToken())
	for _, ws := range []string{"wsa", "wsb"} {
		if _, err := w.admin.CreateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	w.attacker = w.enroll(t, attackerID)
	for _, id := range []subjects.Agent{neighbourID, victimID} {
		w.runVictim(t, id)
	}
	w.watch(t)
	return w
}

// enroll enrolls id through the HTTP API with a key pair made as the CLI
// makes it.
func (w *world) enroll(t *testing.T, id subjects.Agent) *enroll.Config {
	t.Helper()
	ctx := context.Background()
	tok, err := w.admin.CreateEnrollmentToken(ctx, id.Workspace, client.EnrollmentTokenRequest{Agent: id.ID})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := enroll.Enroll(ctx, w.cp.URL(), tok.Token, "")
	if err != nil {
		t.Fatalf("enroll %s: %v", id, err)
	}
	return cfg
}

// runVictim runs a real agent for id, serving a directory with a secret.
func (w *world) runVictim(t *testing.T, id subjects.Agent) {
	t.Helper()
	v := &victim{root: t.TempDir(), done: make(chan error, 1)}
	if err := os.WriteFile(filepath.Join(v.root, "victim.txt"), []byte("secret of "+id.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Identity: w.enroll(t, id), Root: v.root, HeartbeatInterval: 500 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { v.done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-v.done:
		case <-time.After(waitLong):
			t.Errorf("victim %s did not stop", id)
		}
	})
	var got *client.Agent
	waitFor(t, id.String()+" online", func() bool {
		got, err = w.admin.GetAgent(context.Background(), id.Workspace, id.ID)
		return err == nil && got.Status == "online"
	})
	v.instance, v.hostname = a.Instance(), got.Hostname
	w.victims[id] = v
}

// watch subscribes to everything in every account the deployment has: the
// control plane's app account, the agents' account (all agent subjects) and
// the system account. A watcher records every message that carries a marker.
func (w *world) watch(t *testing.T) {
	t.Helper()
	auth, err := authority.LoadAuthority(filepath.Join(w.stateDir, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	for _, acc := range []struct {
		name    string
		creds   func() ([]byte, error)
		subject string
	}{
		{authority.AccountName, auth.ServiceCreds, ">"},
		{authority.AgentsAccountName, auth.AgentsServiceCreds, "agent.>"},
		{authority.SystemAccountName, auth.SystemCreds, ">"},
	} {
		creds, err := acc.creds()
		if err != nil {
			t.Fatal(err)
		}
		opt, err := enroll.CredsOption(creds)
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(w.cp.NATSURLs()[0], opt)
		if err != nil {
			t.Fatalf("watcher in %s: %v", acc.name, err)
		}
		t.Cleanup(nc.Close)
		if _, err := nc.Subscribe(acc.subject, func(m *nats.Msg) {
			if bytes.Contains(m.Data, []byte(markerTag)) || strings.Contains(m.Subject, markerTag) {
				w.mu.Lock()
				w.seen = append(w.seen, sighting{acc.name, m.Subject, m.Data})
				w.mu.Unlock()
			}
		}); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

// breaches returns every sighting of marker outside the attacker's own
// subjects in the agents' account.
func (w *world) breaches(marker string) []sighting {
	own, _ := attackerID.Wildcard()
	own = strings.TrimSuffix(own, ">")
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []sighting
	for _, s := range w.seen {
		if !bytes.Contains(s.data, []byte(marker)) && !strings.Contains(s.subject, marker) {
			continue
		}
		if s.account == authority.AgentsAccountName && strings.HasPrefix(s.subject, own) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// attackerConn connects with the attacker's real credentials; its
// asynchronous errors (permission violations) go to errs.
func (w *world) attackerConn(t *testing.T) (*nats.Conn, *asyncErrs) {
	t.Helper()
	errs := &asyncErrs{ch: make(chan error, 256)}
	nc, err := nats.Connect(w.attacker.NATSServers(), append(w.attacker.NATSOptions(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs.ch <- err:
			default:
			}
		}))...)
	if err != nil {
		t.Fatalf("attacker connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// asyncErrs collects a connection's asynchronous errors.
type asyncErrs struct{ ch chan error }

// waitViolation waits for the server's permissions violation naming subject:
// proof that the server refused it, not that it was merely lost.
func (e *asyncErrs) waitViolation(t *testing.T, subject string) {
	t.Helper()
	timer := time.NewTimer(waitLong)
	defer timer.Stop()
	for {
		select {
		case err := <-e.ch:
			msg := err.Error()
			if strings.Contains(strings.ToLower(msg), "permissions violation") && strings.Contains(msg, `"`+subject+`"`) {
				return
			}
		case <-timer.C:
			t.Fatalf("the server raised no permissions violation for %q: the attempt was allowed", subject)
		}
	}
}

func newMarker() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return markerTag + hex.EncodeToString(b[:])
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(pollEvery)
	}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
