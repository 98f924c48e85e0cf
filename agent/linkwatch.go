package agent

import (
	"net"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// A laptop sleeps, wakes on another network, loses Wi-Fi for a minute. The
// NATS client notices none of that by itself: after a wake it trusts a
// connection the server dropped long ago until a ping goes unanswered,
// and while the network is down it waits out its backoff even once the
// network is back. The link watcher tells the agent at once, so that it
// reconnects right away (see watchLinks).
//
// One watcher serves every agent in the process (a process normally runs
// one agent; the load tool runs thousands): it wakes every second, compares
// how far the wall clock and the monotonic clock moved since the last look,
// and compares the machine's addresses with the last ones seen. On Linux a
// netlink subscription makes it look at once when a link, address or route
// changes; elsewhere the one-second look is the whole of it.
const (
	// linkCheckEvery is how often the watcher looks at the clocks and the
	// interfaces.
	linkCheckEvery = time.Second
	// clockJump is how far the wall clock may move apart from the
	// monotonic clock between two looks before it counts as a sleep. On
	// Linux and macOS the monotonic clock stops while the machine sleeps
	// and the wall clock does not. A sleep shorter than this left the
	// server's side of the connection alive (it drops a client it has not
	// heard from for 10–15 s: wire.PingInterval); a longer one may have
	// too, and then costs one reconnect that was not needed, as a stepped
	// clock (NTP, by hand) does.
	clockJump = 3 * time.Second
	// lateTick is how late a look may come (by the monotonic clock) before
	// it counts as a sleep: Windows' monotonic clock runs on through
	// sleep, and a paused VM or a stopped process shows the same way. It is
	// larger than clockJump because a busy machine delays ticks too.
	lateTick = 10 * time.Second
	// linkSettle gathers the burst of notifications one change makes (link
	// up, address added, routes added) into one look.
	linkSettle = 100 * time.Millisecond
	// routeReconnectEvery is how often a change of routes alone (no
	// address or carrier change, no sleep) may force an agent to
	// reconnect. A VPN client or a container runtime can add and remove
	// routes many times a second; each change that moved the path to the
	// control plane would otherwise cost a reconnect, and a fleet's worth
	// of them a storm. The first such reconnect goes at once; one wanted
	// within this time after it waits for its end, and happens then only
	// if the path is still not what the connection uses.
	routeReconnectEvery = 10 * time.Second
)

// linkEvent is what changed since the last look.
type linkEvent struct {
	// Slept is how far the clocks jumped (the machine slept, the process
	// was frozen, or the wall clock was stepped); zero if they did not.
	Slept time.Duration
	// Removed and Added are the addresses ("iface ip") that went away
	// (or whose interface went down or lost its carrier) and appeared.
	Removed, Added []string
	// Routes is set when the OS reported a change (a route, say) that left
	// the addresses as they were.
	Routes bool
}

// Network tells whether the network changed (as opposed to a clock jump alone).
func (e linkEvent) Network() bool { return len(e.Removed) > 0 || len(e.Added) > 0 || e.Routes }

// RoutesOnly tells whether routes alone changed: no sleep, no address or
// carrier change. Reconnects such changes force are rate limited
// (routeReconnectEvery).
func (e linkEvent) RoutesOnly() bool {
	return e.Routes && e.Slept == 0 && len(e.Removed) == 0 && len(e.Added) == 0
}

// linkDetector is the watcher's judgement, apart from clocks and the OS so
// that tests feed it. Each look gives the wall clock (without a monotonic
// reading), the monotonic clock (as the time since some fixed origin) and
// the machine's addresses, sorted.
type linkDetector struct {
	every    time.Duration // the period between looks
	jump     time.Duration // clockJump
	late     time.Duration // lateTick
	started  bool
	lastWall time.Time
	lastMono time.Duration
	addrs    []string
}

func newLinkDetector(every time.Duration) *linkDetector {
	return &linkDetector{every: every, jump: clockJump, late: lateTick}
}

// look records one look and reports what changed; ok is false when nothing
// did. addrs is nil when they could not be read: only the clocks count then.
// notified says the OS reported a change, which counts even when the
// addresses stayed the same.
func (d *linkDetector) look(wall time.Time, mono time.Duration, addrs []string, notified bool) (ev linkEvent, ok bool) {
	if !d.started {
		d.started, d.lastWall, d.lastMono, d.addrs = true, wall, mono, addrs
		return ev, false
	}
	dMono := mono - d.lastMono
	dWall := wall.Sub(d.lastWall)
	d.lastWall, d.lastMono = wall, mono
	if drift := absDuration(dWall - dMono); drift > d.jump {
		ev.Slept = drift
	} else if dMono-d.every > d.late {
		ev.Slept = dMono - d.every
	}
	if addrs != nil {
		if d.addrs != nil {
			ev.Removed, ev.Added = diffSorted(d.addrs, addrs)
		}
		d.addrs = addrs
	}
	ev.Routes = notified && len(ev.Removed) == 0 && len(ev.Added) == 0
	return ev, ev.Slept > 0 || ev.Network()
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// diffSorted returns what of the sorted old is not in the sorted new, and
// the reverse.
func diffSorted(old, cur []string) (removed, added []string) {
	i, j := 0, 0
	for i < len(old) || j < len(cur) {
		switch {
		case j == len(cur) || i < len(old) && old[i] < cur[j]:
			removed = append(removed, old[i])
			i++
		case i == len(old) || cur[j] < old[i]:
			added = append(added, cur[j])
			j++
		default:
			i++
			j++
		}
	}
	return removed, added
}

// interfaceAddrs is the machine's usable addresses, sorted, as "iface ip":
// the global unicast addresses (private ranges included) of every
// interface that is up and has its carrier, loopback aside. Link-local
// addresses are left out: every interface has one, they come and go with
// virtual interfaces (containers), and the agent never reaches its control
// plane through them.
func interfaceAddrs() ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagRunning == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || !ipn.IP.IsGlobalUnicast() {
				continue
			}
			out = append(out, ifc.Name+" "+ipn.IP.String())
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// linkSource is what the watcher reads: the clocks, the addresses, and the
// OS's change notifications. Tests replace it.
type linkSource struct {
	// now gives the wall clock (no monotonic reading) and the monotonic
	// clock as a duration since a fixed origin.
	now func() (wall time.Time, mono time.Duration)
	// addrs is interfaceAddrs.
	addrs func() ([]string, error)
	// tick starts the periodic look: its channel and a stop function.
	tick func(every time.Duration) (<-chan time.Time, func())
	// notify, when set, starts the OS's change notifications until stop
	// is closed, and returns their channel (nil when they are not
	// available) and a function that waits for them to stop.
	notify func(stop <-chan struct{}) (<-chan struct{}, func())
}

var monoOrigin = time.Now()

// systemLinks reads the real clocks and interfaces.
func systemLinks() linkSource {
	return linkSource{
		now: func() (time.Time, time.Duration) {
			now := time.Now()
			return now.Round(0), now.Sub(monoOrigin)
		},
		addrs: interfaceAddrs,
		tick: func(every time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(every)
			return t.C, t.Stop
		},
		notify: linkNotifications,
	}
}

// linkHub runs one watcher for every subscriber in the process: it starts
// with the first subscription and stops with the last.
type linkHub struct {
	src   func() linkSource
	every time.Duration
	// routeEvery is routeReconnectEvery (tests shorten it).
	routeEvery time.Duration
	// pathGone is the agents' judgement of whether a change broke their
	// connection's path (see pathGone; tests replace it).
	pathGone func(nc *nats.Conn, ev linkEvent) string

	mu   sync.Mutex
	subs map[int]func(linkEvent)
	next int
	stop chan struct{}
	done chan struct{}
}

// links is the process's hub.
var links = newLinkHub(systemLinks, linkCheckEvery)

func newLinkHub(src func() linkSource, every time.Duration) *linkHub {
	return &linkHub{src: src, every: every, routeEvery: routeReconnectEvery, pathGone: pathGone, subs: map[int]func(linkEvent){}}
}

// subscribe calls f with every change until the returned function is
// called. f runs on the watcher's goroutine and must not block.
func (h *linkHub) subscribe(f func(linkEvent)) (unsubscribe func()) {
	h.mu.Lock()
	id := h.next
	h.next++
	h.subs[id] = f
	if h.stop == nil {
		h.stop, h.done = make(chan struct{}), make(chan struct{})
		go h.run(h.src(), h.stop, h.done)
	}
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, id)
			var stop, done chan struct{}
			if len(h.subs) == 0 && h.stop != nil {
				stop, done = h.stop, h.done
				h.stop, h.done = nil, nil
			}
			h.mu.Unlock()
			if stop != nil {
				close(stop)
				<-done
			}
		})
	}
}

// publish hands ev to every subscriber.
func (h *linkHub) publish(ev linkEvent) {
	h.mu.Lock()
	fs := make([]func(linkEvent), 0, len(h.subs))
	for _, f := range h.subs {
		fs = append(fs, f)
	}
	h.mu.Unlock()
	for _, f := range fs {
		f(ev)
	}
}

// run looks every h.every, and linkSettle after the OS reports a change,
// until stop is closed.
func (h *linkHub) run(src linkSource, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	d := newLinkDetector(h.every)
	look := func(notified bool) {
		wall, mono := src.now()
		addrs, err := src.addrs()
		if err != nil {
			addrs = nil
		}
		if ev, ok := d.look(wall, mono, addrs, notified); ok {
			h.publish(ev)
		}
	}
	look(false)
	tick, stopTick := src.tick(h.every)
	defer stopTick()
	var notes <-chan struct{}
	if src.notify != nil {
		var wait func()
		notes, wait = src.notify(stop)
		defer wait()
	}
	var settle <-chan time.Time
	for {
		select {
		case <-stop:
			return
		case <-tick:
			if settle == nil {
				look(false)
			}
		case _, ok := <-notes:
			if !ok {
				notes = nil // notifications failed: the ticker carries on
				continue
			}
			if settle == nil {
				settle = time.After(linkSettle)
			}
		case <-settle:
			settle = nil
			look(true)
		}
	}
}
