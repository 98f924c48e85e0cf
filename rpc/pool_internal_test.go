package rpc

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/internal/natstest"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/subjects"
)

// A request reads from its (pooled) reply channel only replies sent to its
// own reply subject: none left in the channel by the request that used it
// before (on another subject, of another agent), none that arrives for a
// request after it ended. Agents answer at once, twice, late (after the
// call gave up, when its subject or its channel may serve another call)
// or never; calls time out or are canceled at random moments, across
// several agents, so that channels travel between agents through the pool.
// A call whose agent answered at once in time gets its own answer.
func TestPooledReplyChannelsCarryOnlyTheirOwnSubject(t *testing.T) {
	ns := natstest.Start(t)
	nc, agentNC := natstest.Connect(t, ns), natstest.Connect(t, ns)
	r, err := newReplies(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.close() })
	agents := make([]subjects.Agent, 4)
	var late sync.WaitGroup
	t.Cleanup(late.Wait)
	var stop atomic.Bool
	for i := range agents {
		agents[i] = subjects.Agent{Workspace: "w1", ID: "a" + strconv.Itoa(i)}
		subj, err := agents[i].RPC()
		if err != nil {
			t.Fatal(err)
		}
		sub, err := agentNC.Subscribe(subj, func(m *nats.Msg) {
			// The request is "<mode> <token>"; the answer is the token.
			mode, token, _ := strings.Cut(string(m.Data), " ")
			reply := m.Reply
			switch mode {
			case "once":
				_ = agentNC.Publish(reply, []byte(token))
			case "twice":
				_ = agentNC.Publish(reply, []byte(token))
				_ = agentNC.Publish(reply, []byte(token))
			case "late":
				if stop.Load() {
					return
				}
				late.Go(func() {
					time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
					_ = agentNC.Publish(reply, []byte(token))
					time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
					_ = agentNC.Publish(reply, []byte(token))
				})
			case "never":
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	if err := agentNC.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop.Store(true) })

	modes := []string{"once", "once", "twice", "late", "never"}
	var seq atomic.Int64
	var ownOK, ownMissed, foreign atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 300 {
				a := agents[rand.IntN(len(agents))]
				first, _ := a.Reply(r.owner, "0")
				prefix := strings.TrimSuffix(first, "0")
				token := strconv.FormatInt(seq.Add(1), 10)
				mode := modes[rand.IntN(len(modes))]
				subj, _ := a.RPC()
				var seen []string // the subjects of the replies this call read
				accept := func(m *nats.Msg) (take, own bool) {
					seen = append(seen, m.Subject)
					mine := string(m.Data) == token
					return mine, mine
				}
				timeout := time.Duration(1+rand.IntN(15)) * time.Millisecond
				if mode == "once" || mode == "twice" {
					timeout = 5 * time.Second
				}
				c, cancel := context.WithTimeout(context.Background(), timeout)
				if rand.IntN(8) == 0 {
					time.AfterFunc(time.Duration(rand.IntN(2000))*time.Microsecond, cancel)
				}
				m, err := r.request(c, a, subj, []byte(mode+" "+token), accept)
				canceled := c.Err() != nil
				cancel()
				for _, s := range seen {
					if !strings.HasPrefix(s, prefix) || s != seen[0] {
						foreign.Add(1)
						t.Errorf("a call to %s read replies on %q: not all on one subject of its agent", a.ID, seen)
						break
					}
				}
				switch {
				case err == nil && string(m.Data) != token:
					t.Errorf("call %s got the answer %q", token, m.Data)
				case err == nil:
					ownOK.Add(1)
				case (mode == "once" || mode == "twice") && !canceled:
					ownMissed.Add(1)
					t.Errorf("call %s (%s) to an agent that answered at once: %v", token, mode, err)
				}
			}
		})
	}
	wg.Wait()
	r.mu.Lock()
	left := len(r.pending)
	r.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d reply subjects still pending after every call ended", left)
	}
	t.Logf("%d answered, %d missed, %d read foreign replies", ownOK.Load(), ownMissed.Load(), foreign.Load())
}

// A call's presence watch does nothing once stop has returned: no cancel,
// and lapsed is set exactly when the watch cancelled the request. The
// watch checks every 100 µs against an agent that is offline with its
// start-by time passed (every check gives up), and stop comes at random
// moments, before, during and after the first checks.
func TestWatcherDoesNothingAfterStop(t *testing.T) {
	ns := natstest.Start(t)
	pr := presence.New(presence.Config{MinLease: time.Millisecond})
	t.Cleanup(pr.Close)
	c, err := New(Config{Conn: natstest.Connect(t, ns), Presence: pr, Poll: 100 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ag := subjects.Agent{Workspace: "w1", ID: "gone"}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				var cancels atomic.Int32
				ctx, cancel := context.WithCancel(context.Background())
				first := presence.Entry{Status: presence.Online}
				w := c.watch(ctx, ag, first, time.Now().Add(-time.Second), func() { cancels.Add(1); cancel() })
				if d := rand.IntN(400); d > 0 {
					time.Sleep(time.Duration(d) * time.Microsecond)
				}
				w.stop()
				n := cancels.Load()
				lapsed := w.lapsed
				time.Sleep(300 * time.Microsecond) // several periods
				if later := cancels.Load(); later != n || n > 1 {
					t.Errorf("the watch cancelled %d times, %d of them after stop returned", later, later-n)
				}
				if (lapsed != nil) != (n == 1) {
					t.Errorf("lapsed %v after %d cancels", lapsed, n)
				}
				cancel()
			}
		})
	}
	wg.Wait()
}

// A presence check that goes on watching allocates nothing: every check
// runs on a goroutine of its own (time.AfterFunc), and each such
// goroutine that allocates while a GC marks pays for at least 64 KiB of
// the marking (at 10,000 agents, one in seven of the control plane's
// mark assists were these checks).
func TestWatcherCheckAllocatesNothing(t *testing.T) {
	ns := natstest.Start(t)
	pr := presence.New(presence.Config{})
	t.Cleanup(pr.Close)
	c, err := New(Config{Conn: natstest.Connect(t, ns), Presence: pr, Poll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ag := subjects.Agent{Workspace: "w1", ID: "quiet"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Offline from the start, with a minute to start by: every check
	// goes on watching.
	w := c.watch(ctx, ag, presence.Entry{Status: presence.Offline}, time.Now().Add(time.Minute), cancel)
	defer w.stop()
	if n := testing.AllocsPerRun(100, w.check); n != 0 {
		t.Fatalf("a check that goes on watching allocated %.1f times", n)
	}
	if w.lapsed != nil || ctx.Err() != nil {
		t.Fatal("the checks gave up on an agent whose start-by time is a minute away")
	}
}
