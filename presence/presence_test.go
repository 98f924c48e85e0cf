package presence_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/internal/natstest"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

var ag = subjects.Agent{Workspace: "w1", ID: "laptop"}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := wire.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// step is one event of a presence scenario: advance the clock, then deliver
// a message (kind "" delivers nothing), then expect a status.
type step struct {
	after time.Duration
	kind  string
	inst  string
	ivlMs int64
	conn  uint64 // the connection the message says it went out on (0: none); for "disconnect", the one that closed
	want  presence.Status
}

func TestStatusTransitions(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"never seen is offline", []step{{want: presence.Offline}}},
		{"hello is online", []step{{kind: "hello", inst: "a", want: presence.Online}}},
		{"lease lapses to reconnecting then offline", []step{
			{kind: "hello", inst: "a", want: presence.Online},
			{after: 5 * time.Second, want: presence.Online},
			{after: 2 * time.Second, want: presence.Reconnecting},
			{after: 28 * time.Second, want: presence.Reconnecting},
			{after: 2 * time.Second, want: presence.Offline},
		}},
		{"heartbeats keep it online", []step{
			{kind: "hello", inst: "a", want: presence.Online},
			{after: 5 * time.Second, kind: "heartbeat", inst: "a", ivlMs: 2000, want: presence.Online},
			{after: 5 * time.Second, kind: "heartbeat", inst: "a", ivlMs: 2000, want: presence.Online},
			{after: 5 * time.Second, want: presence.Online},
		}},
		{"lease follows the agent's interval", []step{
			{kind: "heartbeat", inst: "a", ivlMs: 200, want: presence.Online},
			{after: 2900 * time.Millisecond, want: presence.Online}, // min lease 3 s
			{after: 200 * time.Millisecond, want: presence.Reconnecting},
			{kind: "heartbeat", inst: "a", ivlMs: 5000, want: presence.Online},
			{after: 14 * time.Second, want: presence.Online},
		}},
		{"goodbye is offline at once", []step{
			{kind: "hello", inst: "a", want: presence.Online},
			{kind: "goodbye", inst: "a", want: presence.Offline},
			{kind: "heartbeat", inst: "a", want: presence.Offline}, // late beat of the gone instance
		}},
		{"a replaced instance's goodbye is ignored", []step{
			{kind: "hello", inst: "old", want: presence.Online},
			{kind: "hello", inst: "new", want: presence.Online},
			{kind: "goodbye", inst: "old", want: presence.Online},
			{kind: "heartbeat", inst: "old", want: presence.Online},
			{after: 7 * time.Second, kind: "heartbeat", inst: "old", want: presence.Reconnecting},
		}},
		{"a stranger's heartbeat cannot displace a live instance", []step{
			{kind: "hello", inst: "a", want: presence.Online},
			{kind: "heartbeat", inst: "b", want: presence.Online},
			{kind: "goodbye", inst: "b", want: presence.Online},
		}},
		{"after a restart the new instance's heartbeat is enough", []step{
			{kind: "hello", inst: "a", want: presence.Online},
			{after: 10 * time.Second, want: presence.Reconnecting},
			{kind: "heartbeat", inst: "b", want: presence.Online},
			{kind: "goodbye", inst: "a", want: presence.Online},
		}},
		{"a new instance after goodbye is online", []step{
			{kind: "hello", inst: "a", want: presence.Online},
			{kind: "goodbye", inst: "a", want: presence.Offline},
			{kind: "hello", inst: "b", want: presence.Online},
		}},
		{"the live connection's disconnect is reconnecting at once, offline a window later", []step{
			{kind: "hello", inst: "a", ivlMs: 20000, conn: 7, want: presence.Online},
			{after: time.Second, kind: "disconnect", conn: 7, want: presence.Reconnecting},
			{after: 29 * time.Second, want: presence.Reconnecting},
			{after: 2 * time.Second, want: presence.Offline},
		}},
		{"a hello on a new connection is online again", []step{
			{kind: "hello", inst: "a", ivlMs: 20000, conn: 7, want: presence.Online},
			{kind: "disconnect", conn: 7, want: presence.Reconnecting},
			{after: time.Second, kind: "hello", inst: "a", ivlMs: 20000, conn: 8, want: presence.Online},
			{after: 50 * time.Second, want: presence.Online}, // the slow heartbeat's lease
		}},
		{"an old connection's late disconnect is ignored", []step{
			{kind: "hello", inst: "a", ivlMs: 20000, conn: 7, want: presence.Online},
			{kind: "hello", inst: "a", ivlMs: 20000, conn: 8, want: presence.Online},
			{kind: "disconnect", conn: 7, want: presence.Online},
		}},
		{"a disconnect that overtook its connection's hello still counts", []step{
			{kind: "disconnect", conn: 9, want: presence.Offline},
			{kind: "hello", inst: "a", ivlMs: 20000, conn: 9, want: presence.Reconnecting},
		}},
		{"heartbeats say their connection too", []step{
			{kind: "hello", inst: "a", ivlMs: 20000, want: presence.Online},
			{kind: "disconnect", conn: 3, want: presence.Online}, // no connection known: the lease decides
			{kind: "heartbeat", inst: "a", ivlMs: 20000, conn: 4, want: presence.Online},
			{kind: "disconnect", conn: 4, want: presence.Reconnecting},
		}},
		{"a disconnect after goodbye stays offline", []step{
			{kind: "hello", inst: "a", conn: 5, want: presence.Online},
			{kind: "goodbye", inst: "a", want: presence.Offline},
			{kind: "disconnect", conn: 5, want: presence.Offline},
		}},
		{"a new instance's heartbeat after goodbye is online", []step{
			{kind: "hello", inst: "a", want: presence.Online},
			{kind: "goodbye", inst: "a", want: presence.Offline},
			{kind: "heartbeat", inst: "b", want: presence.Online},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1_700_000_000, 0)}
			tr := presence.New(presence.Config{Now: clk.Now})
			defer tr.Close()
			for i, s := range tt.steps {
				clk.Add(s.after)
				if s.kind == "disconnect" {
					tr.Disconnected(ag, wire.ConnRef{Server: "NSERVER", ID: s.conn})
				} else if s.kind != "" {
					if err := tr.Observe(ag, s.kind, message(t, s)); err != nil {
						t.Fatalf("step %d: observe: %v", i, err)
					}
				}
				if got := tr.Get(ag).Status; got != s.want {
					t.Fatalf("step %d (%+v): status %s, want %s", i, s, got, s.want)
				}
			}
		})
	}
}

func message(t testing.TB, s step) []byte {
	var conn *wire.ConnRef
	if s.conn != 0 {
		conn = &wire.ConnRef{Server: "NSERVER", ID: s.conn}
	}
	switch s.kind {
	case "hello":
		return mustMarshal(t, &wire.Hello{Instance: s.inst, Version: "v-" + s.inst, HeartbeatMs: s.ivlMs, Conn: conn})
	case "heartbeat":
		return mustMarshal(t, &wire.Heartbeat{Instance: s.inst, IntervalMs: s.ivlMs, Conn: conn})
	default:
		return mustMarshal(t, &wire.Goodbye{Instance: s.inst})
	}
}

func TestSeed(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	tr := presence.New(presence.Config{Now: clk.Now})
	defer tr.Close()
	other := subjects.Agent{Workspace: "w1", ID: "old"}
	tr.Seed(ag, clk.Now().Add(-5*time.Second), &wire.Hello{Instance: "a", Version: "1.0"})
	tr.Seed(other, clk.Now().Add(-time.Hour), nil)
	if e := tr.Get(ag); e.Status != presence.Reconnecting || e.Hello == nil || e.Hello.Version != "1.0" {
		t.Fatalf("recently seen agent after restart: %+v, want reconnecting with its hello", e)
	}
	if e := tr.Get(other); e.Status != presence.Offline {
		t.Fatalf("long-gone agent: %s, want offline", e.Status)
	}
	if err := tr.Observe(ag, "heartbeat", mustMarshal(t, &wire.Heartbeat{Instance: "a"})); err != nil {
		t.Fatal(err)
	}
	tr.Seed(ag, clk.Now().Add(-time.Minute), nil) // older knowledge never wins
	if e := tr.Get(ag); e.Status != presence.Online {
		t.Fatalf("after heartbeat and stale seed: %s, want online", e.Status)
	}
	tr.Lapse(ag, "other-instance")
	if e := tr.Get(ag); e.Status != presence.Online {
		t.Fatalf("lapse of another instance changed status to %s", e.Status)
	}
	tr.Lapse(ag, "a")
	if e := tr.Get(ag); e.Status != presence.Reconnecting {
		t.Fatalf("after lapse: %s, want reconnecting", e.Status)
	}
	if err := tr.Observe(ag, "heartbeat", mustMarshal(t, &wire.Heartbeat{Instance: "a"})); err != nil {
		t.Fatal(err)
	}
	if e := tr.Get(ag); e.Status != presence.Online {
		t.Fatalf("heartbeat after lapse: %s, want online", e.Status)
	}
	tr.Forget(ag)
	if e := tr.Get(ag); e.Status != presence.Offline {
		t.Fatalf("forgotten agent: %s, want offline", e.Status)
	}
}

func TestObserveRejectsMalformed(t *testing.T) {
	tr := presence.New(presence.Config{})
	defer tr.Close()
	for _, tc := range []struct {
		ag   subjects.Agent
		kind string
		data []byte
	}{
		{ag, "hello", []byte{0xc1}},
		{ag, "heartbeat", []byte("not msgpack")},
		{ag, "rpc", mustMarshal(t, &wire.Goodbye{Instance: "a"})},
		{subjects.Agent{Workspace: "w1", ID: "bad id"}, "hello", mustMarshal(t, &wire.Hello{Instance: "a"})},
	} {
		if err := tr.Observe(tc.ag, tc.kind, tc.data); err == nil {
			t.Errorf("Observe(%v, %q, %x) accepted", tc.ag, tc.kind, tc.data)
		}
	}
	if e := tr.Get(ag); e.Status != presence.Offline {
		t.Fatalf("malformed messages changed status to %s", e.Status)
	}
}

// TestOverNATS drives the tracker with real messages on a real server: it
// sees hello at once, reports the lapse by itself and a goodbye at once.
func TestOverNATS(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	tr := presence.New(presence.Config{MinLease: 300 * time.Millisecond, Window: 600 * time.Millisecond, Sweep: 20 * time.Millisecond})
	changes := make(chan presence.Status, 64)
	tr.OnChange(func(a subjects.Agent, e presence.Entry) {
		if a == ag {
			changes <- e.Status
		}
	})
	if err := tr.Start(nc); err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pub := func(kind string, v any) {
		subj, _ := ag.Subject(kind)
		if err := nc.Publish(subj, mustMarshal(t, v)); err != nil {
			t.Fatal(err)
		}
	}
	// next waits for the tracker to reach want and to report it: the change
	// must be reported before the next message, or a heartbeat could land
	// between the lapse and the sweep that reports it.
	next := func(want presence.Status) {
		t.Helper()
		if err := tr.WaitStatus(ctx, ag, want); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-changes:
			if got != want {
				t.Fatalf("change reported: %s, want %s", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("change to %s never reported", want)
		}
	}
	// One message opens the lease, so a stall between two messages on a
	// loaded machine cannot slip a lapse in between.
	pub(subjects.KindHello, &wire.Hello{Instance: "i1", HeartbeatMs: 50})
	next(presence.Online)
	next(presence.Reconnecting)
	next(presence.Offline)
	// A long lease here, so the goodbye (not a lapse) is what ends it.
	pub(subjects.KindHeartbeat, &wire.Heartbeat{Instance: "i1", IntervalMs: 5000})
	next(presence.Online)
	pub(subjects.KindGoodbye, &wire.Goodbye{Instance: "i1"})
	next(presence.Offline)
	select {
	case got := <-changes:
		t.Fatalf("extra change reported: %s", got)
	default:
	}
}

func FuzzObserve(f *testing.F) {
	f.Add("hello", mustMarshal(f, &wire.Hello{Instance: "a", Capabilities: map[string]bool{"pty": true}}))
	f.Add("heartbeat", mustMarshal(f, &wire.Heartbeat{Instance: "a", Seq: 3, IntervalMs: -5}))
	f.Add("heartbeat", mustMarshal(f, &wire.Heartbeat{Instance: "a", IntervalMs: 1 << 62}))
	f.Add("goodbye", mustMarshal(f, &wire.Goodbye{Instance: "a"}))
	f.Add("goodbye", []byte{0x80})
	f.Add("hello", []byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, kind string, data []byte) {
		tr := presence.New(presence.Config{})
		defer tr.Close()
		_ = tr.Observe(ag, "hello", mustMarshal(t, &wire.Hello{Instance: "seed"}))
		_ = tr.Observe(ag, kind, data)
		switch st := tr.Get(ag).Status; st {
		case presence.Online, presence.Reconnecting, presence.Offline:
		default:
			t.Fatalf("status %q", st)
		}
	})
}

// disconnectEvent is a disconnect event as nats-server publishes it (the
// fields presence reads, and some it does not).
func disconnectEvent(acc, tags, server string, cid uint64) []byte {
	return []byte(`{"type":"io.nats.server.advisory.v1.client_disconnect","server":{"name":"n","id":"` + server +
		`"},"client":{"id":` + strconv.FormatUint(cid, 10) + `,"acc":"` + acc + `","name_tag":"OUTPOST_AGENTS","tags":[` + tags +
		`],"kind":"Client"},"reason":"Client Closed"}`)
}

const testAccount = "ADLPMHNFXPJFC5DDBQHMHXNUOQ2LLWYLYOPYFNEVNWVZZ5IVIO2HLRZE"

func TestObserveDisconnect(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		wantErr bool
		want    presence.Status
	}{
		{"the live connection", disconnectEvent(testAccount, `"ws:w1","agent:laptop"`, "NSERVER", 7), false, presence.Reconnecting},
		{"another server's connection of that id", disconnectEvent(testAccount, `"ws:w1","agent:laptop"`, "NOTHER", 7), false, presence.Online},
		{"another agent", disconnectEvent(testAccount, `"ws:w1","agent:desktop"`, "NSERVER", 7), false, presence.Online},
		{"another account", disconnectEvent("AOTHER", `"ws:w1","agent:laptop"`, "NSERVER", 7), false, presence.Online},
		{"no tags (the control plane's own connection)", disconnectEvent(testAccount, "", "NSERVER", 7), false, presence.Online},
		{"tags that name no agent", disconnectEvent(testAccount, `"ws:w1"`, "NSERVER", 7), true, presence.Online},
		{"tags with a bad token", disconnectEvent(testAccount, `"ws:w1","agent:lap top"`, "NSERVER", 7), true, presence.Online},
		{"no connection id", disconnectEvent(testAccount, `"ws:w1","agent:laptop"`, "NSERVER", 0), true, presence.Online},
		{"not JSON", []byte("\x00"), true, presence.Online},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := presence.New(presence.Config{})
			defer tr.Close()
			hello := &wire.Hello{Instance: "a", HeartbeatMs: 20000, Conn: &wire.ConnRef{Server: "NSERVER", ID: 7}}
			if err := tr.Observe(ag, subjects.KindHello, mustMarshal(t, hello)); err != nil {
				t.Fatal(err)
			}
			err := tr.ObserveDisconnect(testAccount, tt.data)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ObserveDisconnect: err %v, want error %v", err, tt.wantErr)
			}
			if got := tr.Get(ag).Status; got != tt.want {
				t.Fatalf("status %s, want %s", got, tt.want)
			}
		})
	}
}

func FuzzObserveDisconnect(f *testing.F) {
	f.Add(disconnectEvent(testAccount, `"ws:w1","agent:laptop"`, "NSERVER", 7))
	f.Add(disconnectEvent(testAccount, `"ws:w1","agent:lap top"`, "NSERVER", 7))
	f.Add(disconnectEvent(testAccount, "", "", 0))
	f.Add([]byte(`{"client":{"id":-1}}`))
	f.Add([]byte(`{"client":null,"server":[]}`))
	f.Add([]byte("\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := presence.New(presence.Config{})
		defer tr.Close()
		hello := &wire.Hello{Instance: "a", Conn: &wire.ConnRef{Server: "NSERVER", ID: 7}}
		_ = tr.Observe(ag, subjects.KindHello, mustMarshal(t, hello))
		_ = tr.ObserveDisconnect(testAccount, data)
		switch st := tr.Get(ag).Status; st {
		case presence.Online, presence.Reconnecting, presence.Offline:
		default:
			t.Fatalf("status %q", st)
		}
	})
}

// TestEachSeen: every agent heard of or seeded, with when it was last
// heard from; a forgotten one is not among them.
func TestEachSeen(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	tr := presence.New(presence.Config{Now: clk.Now})
	defer tr.Close()
	seeded := subjects.Agent{Workspace: "w1", ID: "seeded"}
	gone := subjects.Agent{Workspace: "w2", ID: "gone"}
	tr.Seed(seeded, clk.Now().Add(-time.Hour), nil)
	tr.Seed(gone, clk.Now().Add(-time.Minute), nil)
	if err := tr.Observe(ag, "heartbeat", mustMarshal(t, &wire.Heartbeat{Instance: "a"})); err != nil {
		t.Fatal(err)
	}
	tr.Forget(gone)
	got := map[subjects.Agent]time.Time{}
	tr.EachSeen(func(a subjects.Agent, at time.Time) { got[a] = at })
	want := map[subjects.Agent]time.Time{seeded: clk.Now().Add(-time.Hour), ag: clk.Now()}
	if len(got) != len(want) {
		t.Fatalf("EachSeen gave %v, want %v", got, want)
	}
	for a, at := range want {
		if !got[a].Equal(at) {
			t.Errorf("%v last seen %v, want %v", a, got[a], at)
		}
	}
}
