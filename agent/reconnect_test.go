package agent_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/subjects"
)

// hellos counts the agent's hellos, one per (re)connect.
func (w *world) hellos(t *testing.T) <-chan struct{} {
	t.Helper()
	subj, err := laptop.Subject(subjects.KindHello)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 64)
	sub, err := w.nc.Subscribe(subj, func(*nats.Msg) { ch <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	if err := w.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return ch
}

func expectHello(t *testing.T, ch <-chan struct{}, why string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no new hello after %s: the agent did not reconnect", why)
	}
}

// TestWakeReconnectsAtOnce: after the clocks jumped (the machine slept), a
// connected agent reconnects right away rather than trusting a connection
// the server has likely dropped; so it does when the connection's own
// address went away. A change that leaves the connection's path as it was
// (another interface's address) leaves the connection alone.
func TestWakeReconnectsAtOnce(t *testing.T) {
	w := newWorld(t)
	a, err := agent.New(agent.Config{Identity: w.ident, Root: w.root, HeartbeatInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	drive := a.DriveLinks()
	r := w.run(t, a)
	w.waitOnline(t, r.a.Instance())
	hellos := w.hellos(t)

	drive(10*time.Minute, nil, nil)
	expectHello(t, hellos, "a wake")
	w.waitOnline(t, r.a.Instance())

	// The test's server is on loopback: the connection's address is 127.0.0.1.
	drive(0, []string{"lo 127.0.0.1"}, nil)
	expectHello(t, hellos, "the connection's address went away")
	w.waitOnline(t, r.a.Instance())

	drive(0, []string{"wlan0 192.168.1.20"}, []string{"eth0 10.0.0.5", "docker0 172.17.0.1"})
	select {
	case <-hellos:
		t.Fatal("the agent reconnected after a change that left its connection's path as it was")
	case <-time.After(time.Second): // the decision is made in drive; a hello would follow in milliseconds
	}
}

// TestNetworkChangeEndsTheBackoff: an agent waiting to reconnect (here for
// an hour, its backoff made endless) tries at once when the network
// changes, as when a laptop's Wi-Fi comes back.
func TestNetworkChangeEndsTheBackoff(t *testing.T) {
	w := newWorld(t)
	a, err := agent.New(agent.Config{
		Identity: w.ident, Root: w.root, HeartbeatInterval: 100 * time.Millisecond,
		NATSOptions: []nats.Option{nats.CustomReconnectDelay(func(int) time.Duration { return time.Hour })},
	})
	if err != nil {
		t.Fatal(err)
	}
	drive := a.DriveLinks()
	r := w.run(t, a)
	w.waitOnline(t, r.a.Instance())

	w.auth.Resume(t, w.auth.Stop())
	ctx := tctx(t)
	for w.pr.Get(laptop).Status == presence.Online {
		select {
		case <-ctx.Done():
			t.Fatal("the agent still looks online after the server restarted")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if st := w.pr.Get(laptop).Status; st != presence.Reconnecting {
		t.Fatalf("status %s while the agent waits to reconnect, want reconnecting", st)
	}
	drive(0, nil, []string{"wlan0 192.168.1.20"})
	w.waitOnline(t, r.a.Instance())
}

// countHellos counts what arrives on ch for d.
func countHellos(ch <-chan struct{}, d time.Duration) int {
	n := 0
	deadline := time.After(d)
	for {
		select {
		case <-ch:
			n++
		case <-deadline:
			return n
		}
	}
}

// TestRouteChurnIsRateLimited: routes changing many times a second (a VPN
// client, a container runtime), each moving the connection's path, force
// one reconnect, not one each; the change that arrives too soon is looked
// at again when the limit's time is up. An address change or a wake still
// reconnects at once.
func TestRouteChurnIsRateLimited(t *testing.T) {
	churn := func(drive func(time.Duration, []string, []string)) {
		for range 40 {
			drive(0, nil, nil)
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Run("address and wake at once", func(t *testing.T) {
		w := newWorld(t)
		a, err := agent.New(agent.Config{Identity: w.ident, Root: w.root, HeartbeatInterval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		drive := a.DriveLinks()
		a.JudgePaths(time.Hour, func() string { return "the route moved" })
		r := w.run(t, a)
		w.waitOnline(t, r.a.Instance())
		hellos := w.hellos(t)

		churn(drive)
		expectHello(t, hellos, "the first route change")
		if n := countHellos(hellos, time.Second); n != 0 {
			t.Fatalf("%d more reconnects during and after 40 route changes in 0.4 s, want none within the limit", n)
		}
		drive(0, []string{"wlan0 192.168.1.20"}, nil)
		expectHello(t, hellos, "an address went away (within the route limit)")
		drive(10*time.Minute, nil, nil)
		expectHello(t, hellos, "a wake (within the route limit)")
	})
	t.Run("put off, then looked at again", func(t *testing.T) {
		w := newWorld(t)
		a, err := agent.New(agent.Config{Identity: w.ident, Root: w.root, HeartbeatInterval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		drive := a.DriveLinks()
		var gone atomic.Value
		gone.Store("the route moved")
		const every = 2 * time.Second
		a.JudgePaths(every, func() string { return gone.Load().(string) })
		r := w.run(t, a)
		w.waitOnline(t, r.a.Instance())
		hellos := w.hellos(t)

		churn(drive)
		expectHello(t, hellos, "the first route change")
		first := time.Now()
		expectHello(t, hellos, "the route changes put off")
		if gap := time.Since(first); gap < every/2 {
			t.Errorf("the put-off reconnect came %v after the first, want about %v", gap, every)
		}
		// No change since: nothing more.
		if n := countHellos(hellos, 2*every); n != 0 {
			t.Fatalf("%d reconnects with no route change", n)
		}
		// Put off again, but the path is back as it was by then: no reconnect.
		drive(0, nil, nil)
		expectHello(t, hellos, "a route change after the limit's time")
		churn(drive)
		gone.Store("")
		if n := countHellos(hellos, 2*every); n != 0 {
			t.Fatalf("%d reconnects after the path came back as it was", n)
		}
	})
}
