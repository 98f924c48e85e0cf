package agent

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// linkProbeTimeout bounds the ping that checks a connection after a change
// of network that removed nothing: no pong by then, and the agent
// reconnects. Long enough for a slow or busy link, short next to the 6 s
// the ping interval would take.
const linkProbeTimeout = 2 * time.Second

// watchLinks makes nc follow the machine through sleep and network
// changes until the returned stop is called:
//
//   - after a wake (the clocks jumped) it reconnects at once: the server
//     has most likely dropped the old connection, and the client would
//     otherwise trust it until two pings go unanswered;
//   - while disconnected, any change (a link or address back) ends the
//     backoff wait and tries at once;
//   - connected, a change that took an address away (a new Wi-Fi network,
//     a cable pulled) reconnects at once; one that only added addresses or
//     moved routes pings the server and reconnects when no pong comes
//     within linkProbeTimeout.
func (a *Agent) watchLinks(nc *nats.Conn) (stop func()) {
	var probing atomic.Bool
	var wg sync.WaitGroup
	unsubscribe := a.links.subscribe(func(ev linkEvent) {
		switch {
		case ev.Slept > 0:
			a.log.Info("the clock jumped (the machine slept?): reconnecting now", "by", ev.Slept.Round(time.Millisecond))
			a.forceReconnect(nc)
		case !nc.IsConnected():
			a.log.Info("network changed while disconnected: reconnecting now", "removed", ev.Removed, "added", ev.Added)
			a.forceReconnect(nc)
		case len(ev.Removed) > 0:
			a.log.Info("network changed: reconnecting now", "removed", ev.Removed, "added", ev.Added)
			a.forceReconnect(nc)
		case probing.CompareAndSwap(false, true):
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer probing.Store(false)
				if err := nc.FlushTimeout(linkProbeTimeout); err != nil && nc.IsConnected() {
					a.log.Info("network changed and the server did not answer a ping: reconnecting now", "added", ev.Added, "err", err)
					a.forceReconnect(nc)
				}
			}()
		}
	})
	return func() {
		unsubscribe()
		wg.Wait()
	}
}

func (a *Agent) forceReconnect(nc *nats.Conn) {
	if err := nc.ForceReconnect(); err != nil && !nc.IsClosed() {
		a.log.Warn("force reconnect", "err", err)
	}
}
