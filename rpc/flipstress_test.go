package rpc_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Calls made while the agent's presence keeps changing (heartbeats stop
// and lapse, hellos of new connections, goodbyes) and while it answers
// some calls at once, some late and some never end with their own answer
// or a 503/504 that says the call may have run, never a 404 or another
// call's answer, and never hang: the presence watch cancels them from its
// timer while their pooled reply channels are in use, and calls made
// after a cancelled one reuse its subject and channel.
func TestCallsAcrossPresenceChangesGetTheirOwnAnswerOr503(t *testing.T) {
	f := setup(t)
	var late sync.WaitGroup
	t.Cleanup(late.Wait)
	var closing atomic.Bool
	t.Cleanup(func() { closing.Store(true) })
	sub, err := f.nc.Subscribe(mustRPC(t, ag), func(m *nats.Msg) {
		b, ok := echoPing(t, m)
		if !ok {
			return
		}
		switch rand.IntN(4) {
		case 0, 1:
			_ = f.nc.Publish(m.Reply, b)
		case 2:
			if closing.Load() {
				return
			}
			late.Go(func() {
				time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
				_ = f.nc.Publish(m.Reply, b)
			})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	_ = f.nc.Flush()

	// The presence changer: beats, silence past the lease, a new hello
	// (a reconnect), a goodbye.
	stop, changed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(changed)
		for i := 0; ; i++ {
			switch rand.IntN(4) {
			case 0:
				f.beat(t)
			case 1:
				b, _ := wire.Marshal(&wire.Hello{Instance: "i" + strconv.Itoa(i), HeartbeatMs: 20})
				_ = f.pr.Observe(ag, subjects.KindHello, b)
			case 2:
				b, _ := wire.Marshal(&wire.Goodbye{Instance: f.pr.Get(ag).Instance})
				_ = f.pr.Observe(ag, subjects.KindGoodbye, b)
			case 3: // silence
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rand.IntN(150)) * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-changed })

	var answered, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 15 {
				mine := strconv.Itoa(g) + "/" + strconv.Itoa(i)
				c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				var res wire.PingResult
				err := f.c.Call(c, ag, wire.OpPing, &wire.PingResult{Instance: mine}, &res, rpc.CallOptions{Timeout: time.Second})
				hung := c.Err() != nil
				cancel()
				switch we := wire.AsError(err); {
				case hung:
					t.Errorf("call %s ran to the test's own deadline: %v", mine, err)
				case err == nil && res.Instance != mine:
					t.Errorf("call %s got the answer to call %s", mine, res.Instance)
				case err == nil:
					answered.Add(1)
				case we == nil || we.Code != wire.CodeUnavailable && we.Code != wire.CodeDeadlineExceeded || !rpc.MaybeDelivered(err):
					t.Errorf("call %s: %v (maybe delivered %v), want its answer, or a 503 or 504 that may have run", mine, err, rpc.MaybeDelivered(err))
				default:
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d answered, %d 503/504", answered.Load(), refused.Load())
	if answered.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("%d calls answered and %d refused: the test exercised only one side", answered.Load(), refused.Load())
	}
}
