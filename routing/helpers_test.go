package routing

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/internal/leaktest"
	"github.com/outposthq/outpost/internal/natstest"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Wait limits: generous bounds for polling, never sleeps as synchronisation.
const (
	waitLong  = 10 * time.Second
	heartbeat = 200 * time.Millisecond
	ws        = "acme"
)

// TestMain fails the run if any goroutine of this package outlives the tests.
func TestMain(m *testing.M) { leaktest.Main(m, "outpost/routing.") }

// directory is an in-memory Directory.
type directory struct {
	mu      sync.Mutex
	pools   map[string]string // agent id → pool ("" for none)
	revoked map[string]bool
}

func (d *directory) Enrolled(_ context.Context, ag subjects.Agent) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	pool, ok := d.pools[ag.ID]
	if !ok || d.revoked[ag.ID] || ag.Workspace != ws {
		return "", wire.Errorf(wire.CodeNotFound, "", "agent %q is not enrolled", ag.ID)
	}
	return pool, nil
}

func (d *directory) PoolMembers(_ context.Context, w, pool string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for id, p := range d.pools {
		if p == pool && !d.revoked[id] && w == ws {
			out = append(out, id)
		}
	}
	return out, nil
}

func (d *directory) revoke(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.revoked[id] = true
}

// fixture is a real nats-server with JetStream, KV buckets, presence, an
// rpc client and a router, as the control plane has them.
type fixture struct {
	t        *testing.T
	ns       *server.Server
	nc       *nats.Conn
	sessions jetstream.KeyValue
	claims   jetstream.KeyValue
	presence *presence.Tracker
	dir      *directory
	router   *Router
	// clock is the time of presence and the router; tests advance it.
	clock *clock
}

// clock is real time plus an offset that tests advance, so that a
// reconnect window can pass without waiting for it.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, ns: natstest.Start(t), dir: &directory{pools: map[string]string{}, revoked: map[string]bool{}}, clock: &clock{}}
	f.nc = natstest.Connect(t, f.ns)
	js, err := jetstream.New(f.nc)
	if err != nil {
		t.Fatal(err)
	}
	f.sessions = f.bucket(js, "sessions")
	f.claims = f.bucket(js, "claims")
	f.presence = presence.New(presence.Config{Now: f.clock.now})
	if err := f.presence.Start(f.nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.presence.Close)
	calls, err := rpc.New(rpc.Config{Conn: f.nc, Presence: f.presence, Timeout: waitLong})
	if err != nil {
		t.Fatal(err)
	}
	f.router, err = New(Config{
		Sessions: f.sessions, Claims: f.claims, Presence: f.presence, Agents: f.dir, RPC: calls,
		ReadyTimeout: 300 * time.Millisecond, Now: f.clock.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) bucket(js jetstream.JetStream, name string) jetstream.KeyValue {
	f.t.Helper()
	kv, err := js.CreateKeyValue(ctx(f.t), jetstream.KeyValueConfig{Bucket: name, Storage: jetstream.MemoryStorage})
	if err != nil {
		f.t.Fatal(err)
	}
	return kv
}

// agent starts an enrolled mock agent (in pool, "" for none) on its own
// connection, heartbeating, and waits until presence sees it online.
func (f *fixture) agent(id, pool string) *agenttest.Agent {
	f.t.Helper()
	f.dir.mu.Lock()
	f.dir.pools[id] = pool
	f.dir.mu.Unlock()
	m, err := agenttest.New(natstest.Connect(f.t, f.ns), subjects.Agent{Workspace: ws, ID: id})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(m.Close)
	m.StartHeartbeats(heartbeat)
	f.waitStatus(id, presence.Online)
	return m
}

// enrolled registers an agent that never connected.
func (f *fixture) enrolled(id, pool string) {
	f.dir.mu.Lock()
	defer f.dir.mu.Unlock()
	f.dir.pools[id] = pool
}

func (f *fixture) waitStatus(id string, want presence.Status) {
	f.t.Helper()
	if err := f.presence.WaitStatus(ctx(f.t), subjects.Agent{Workspace: ws, ID: id}, want); err != nil {
		f.t.Fatal(err)
	}
}

// stop makes a mock leave cleanly: goodbye (offline at once), unsubscribed.
func (f *fixture) stop(m *agenttest.Agent) {
	f.t.Helper()
	m.StopHeartbeats()
	m.PublishGoodbye()
	if err := m.SetOnline(false); err != nil {
		f.t.Fatal(err)
	}
	f.waitStatus(m.ID().ID, presence.Offline)
}

func (f *fixture) create(req CreateRequest) *Session {
	f.t.Helper()
	st, err := f.router.Create(ctx(f.t), ws, req)
	if err != nil {
		f.t.Fatalf("create session: %v", err)
	}
	return f.router.Session(ws, st.ID)
}

func (f *fixture) state(s *Session) *State {
	f.t.Helper()
	st, err := s.State(ctx(f.t))
	if err != nil {
		f.t.Fatalf("session state: %v", err)
	}
	return st
}

// leases lists the agents with a lease in the claims bucket.
func (f *fixture) leases() []string {
	f.t.Helper()
	keys, err := f.claims.Keys(ctx(f.t))
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// twoAgents is a session with backends "laptop" (agent a1) and "desk"
// (agent a2), active laptop.
func (f *fixture) twoAgents() (*Session, *agenttest.Agent, *agenttest.Agent) {
	a1, a2 := f.agent("a1", ""), f.agent("a2", "")
	s := f.create(CreateRequest{ID: "s1", Active: "laptop", Backends: map[string]Spec{
		"laptop": {Kind: KindAgent, Agent: "a1"},
		"desk":   {Kind: KindAgent, Agent: "a2"},
	}})
	return s, a1, a2
}

// gate makes a handler wait until opened, and says when it was entered.
type gate struct {
	entered chan struct{}
	open    chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), open: make(chan struct{})} }

func (g *gate) wait() {
	g.entered <- struct{}{}
	<-g.open
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

func (g *gate) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(waitLong):
		t.Fatal("handler was not entered")
	}
}

// wantErr checks that err is a *wire.Error with code and (if set) reason.
func wantErr(t *testing.T, err error, code wire.Code, reason string) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code || reason != "" && we.Reason != reason {
		t.Fatalf("err = %v, want %s/%s", err, code, reason)
	}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// execOf answers exec with the agent's id on stdout and counts runs.
func execOf(id string) agenttest.HandlerFunc {
	return func(*wire.Request) (any, error) {
		return &wire.ExecResult{Stdout: []byte(id)}, nil
	}
}

// sessionRequests are the requests m saw for op within session st.
func sessionRequests(m *agenttest.Agent, st *State, op string) []*wire.Request {
	var out []*wire.Request
	for _, r := range m.Requests() {
		if r.Op == op && r.Session == st.UID {
			out = append(out, r)
		}
	}
	return out
}
