// Package presence derives whether an agent is online, reconnecting or offline
// from the hello, heartbeat and goodbye messages it publishes.
//
// An agent is online while its lease is fresh (a hello or heartbeat within
// max(3 s, 3 × its heartbeat interval)), reconnecting while it is late but
// inside the reconnect window (about 30 s after its lease lapsed), and offline
// after that, after a clean goodbye, or when it was never seen. The newest
// instance of an identity wins: messages from an instance that another one
// replaced are ignored, so a stopping daemon's goodbye cannot mark its
// successor offline.
//
// With WatchDisconnects, the NATS server's own disconnect events end a lease
// at once: when the connection an agent last said it publishes on closes
// (its process died, or the server's pings found the link half-open), the
// agent is reconnecting from that moment, and offline a reconnect window
// later. Heartbeats can then be slow (agents send one every 20 s): they only
// cover what the events cannot see, such as a control plane that missed an
// event while its own connection was down.
package presence

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Status is an agent's presence as users see it.
type Status string

// The three statuses of API.md.
const (
	Online       Status = "online"
	Reconnecting Status = "reconnecting"
	Offline      Status = "offline"
)

// Defaults of Config.
const (
	DefaultWindow   = 30 * time.Second
	DefaultMinLease = 3 * time.Second
	// DefaultInterval is the heartbeat interval assumed before an agent says its own.
	DefaultInterval = 2 * time.Second
	// leaseBeats is how many heartbeats may be missed before the lease lapses.
	leaseBeats = 3
	// inboxSize is how many presence messages may wait to be applied; beyond
	// it NATS drops them (a slow consumer), and the next heartbeat repairs it.
	inboxSize = 1 << 16
	// supersededMemory bounds how many replaced instances are remembered per agent.
	supersededMemory = 8
	// closedMemory bounds how many closed connections are remembered per
	// agent: a disconnect event may overtake the hello sent on the same
	// connection (they come over different connections of the control plane).
	closedMemory = 4
	// maxSweepGap is the longest the sweeper goes without looking at every
	// agent: a safety net, so that a change no lease-setting path announced
	// (a clock step, say) is reported at most this late.
	maxSweepGap = time.Minute
)

// Config configures a Tracker. Zero values take the defaults.
type Config struct {
	// Window is the reconnect window: how long after its lease lapsed a late
	// agent is reconnecting rather than offline.
	Window time.Duration
	// MinLease is the shortest lease, whatever the agent's interval.
	MinLease time.Duration
	// Sweep is how often lapsed leases are turned into change events.
	Sweep time.Duration
	// Logger receives malformed-message warnings; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now. Tests set it.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.MinLease <= 0 {
		c.MinLease = DefaultMinLease
	}
	if c.Sweep <= 0 {
		c.Sweep = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Entry is what the tracker knows of one agent.
type Entry struct {
	Status Status
	// LastSeen is when the agent last said hello or heartbeat (zero if never).
	LastSeen time.Time
	// LeaseUntil is when the agent stops being online without a heartbeat.
	LeaseUntil time.Time
	// Instance is the live daemon's instance id.
	Instance string
	// Hello is the latest hello of that instance, nil if none was seen. Each
	// hello received is a new value: a changed pointer means the agent said
	// hello again, on a new connection.
	Hello *wire.Hello
	// Paused is what the live instance said last (hello or heartbeat): its
	// owner paused it. A paused agent is online; it answers agent_paused.
	Paused bool
}

// state is the mutable record behind an Entry.
type state struct {
	lastSeen   time.Time
	leaseUntil time.Time
	instance   string
	hello      *wire.Hello
	paused     bool
	gone       bool // the live instance said goodbye
	superseded []string
	reported   Status       // last status given to OnChange
	conn       wire.ConnRef // the connection the live instance last published on (zero: unknown)
	closed     []wire.ConnRef
}

// Tracker keeps the presence of every agent it hears from. It is safe for
// concurrent use.
type Tracker struct {
	cfg Config

	mu     sync.RWMutex // read-locked by Get, which every call makes
	agents map[subjects.Agent]*state
	// due is the earliest time a status may change by time passing alone (a
	// lease lapsing, a reconnect window closing): sweeps before it look at no
	// agent. Zero means the next sweep looks at all of them. It is kept on
	// the clock of Now (monotonic with time.Now), whatever the lease's own.
	due time.Time
	// lastScan is when a sweep last looked at every agent: a clock that went
	// back before it makes the next sweep look again.
	lastScan time.Time
	// scans counts the sweeps that looked at every agent (tests read it).
	scans    int
	onChange []func(subjects.Agent, Entry)
	changed  chan struct{} // closed and replaced on every change
	// msgs is every subscription's channel: one channel keeps an agent's
	// messages in the order it sent them (a hello before its first heartbeat).
	msgs    chan *nats.Msg
	account string // the agents' account whose disconnect events are watched
	subs    []*nats.Subscription
	stop    chan struct{}
	done    chan struct{}
	started bool
	closed  bool

	messages atomic.Uint64 // presence messages received from NATS
}

// New returns a tracker; Start connects it to NATS.
func New(cfg Config) *Tracker {
	cfg.setDefaults()
	return &Tracker{
		cfg:     cfg,
		agents:  map[subjects.Agent]*state{},
		changed: make(chan struct{}),
		msgs:    make(chan *nats.Msg, inboxSize),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// Start subscribes to every agent's hello, heartbeat and goodbye on nc and
// starts the sweeper that reports lapsed leases. Close undoes it.
func (t *Tracker) Start(nc *nats.Conn) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started || t.closed {
		return fmt.Errorf("presence: tracker already started or closed")
	}
	for _, kind := range []string{subjects.KindHello, subjects.KindHeartbeat, subjects.KindGoodbye} {
		subj, err := subjects.AllEvents(kind)
		if err != nil {
			return err
		}
		sub, err := nc.ChanSubscribe(subj, t.msgs)
		if err != nil {
			t.unsubscribeLocked()
			return fmt.Errorf("subscribe %s: %w", subj, err)
		}
		t.subs = append(t.subs, sub)
	}
	if err := nc.Flush(); err != nil {
		t.unsubscribeLocked()
		return fmt.Errorf("presence: flush subscriptions: %w", err)
	}
	t.started = true
	go t.run(t.msgs)
	return nil
}

// WatchDisconnects subscribes, on nc (a connection of the NATS system
// account), to the server's disconnect events of account (the agents'
// account public key). A closed connection that an agent's live instance
// last published on ends its lease at once (see Disconnected). Call it
// after Start; Close undoes it.
func (t *Tracker) WatchDisconnects(nc *nats.Conn, account string) error {
	subj, err := subjects.AccountDisconnects(account)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.started || t.closed {
		return fmt.Errorf("presence: watch disconnects before Start or after Close")
	}
	sub, err := nc.ChanSubscribe(subj, t.msgs)
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", subj, err)
	}
	if err := nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("presence: flush disconnect subscription: %w", err)
	}
	t.account = account
	t.subs = append(t.subs, sub)
	return nil
}

func (t *Tracker) unsubscribeLocked() {
	for _, s := range t.subs {
		_ = s.Unsubscribe()
	}
	t.subs = nil
}

// Close unsubscribes and stops the sweeper. It is idempotent.
func (t *Tracker) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.unsubscribeLocked()
	started := t.started
	t.mu.Unlock()
	close(t.stop)
	if started {
		<-t.done
	}
}

func (t *Tracker) handle(m *nats.Msg) {
	t.messages.Add(1)
	if acc, err := subjects.ParseAccountDisconnects(m.Subject); err == nil {
		if err := t.ObserveDisconnect(acc, m.Data); err != nil {
			t.cfg.Logger.Warn("presence: bad disconnect event", "subject", m.Subject, "err", err)
		}
		return
	}
	ag, kind, err := subjects.Parse(m.Subject)
	if err != nil {
		return
	}
	if err := t.Observe(ag, kind, m.Data); err != nil {
		t.cfg.Logger.Warn("presence: bad message", "subject", m.Subject, "err", err)
	}
}

// Observe applies one hello, heartbeat or goodbye (kind is the subject's
// last token, data its msgpack body) from ag. Malformed input is an error and
// changes nothing.
func (t *Tracker) Observe(ag subjects.Agent, kind string, data []byte) error {
	if err := ag.Validate(); err != nil {
		return err
	}
	now := t.cfg.Now()
	var apply func(*state) bool
	switch kind {
	case subjects.KindHello:
		var h wire.Hello
		if err := wire.Unmarshal(data, &h); err != nil {
			return fmt.Errorf("decode hello: %w", err)
		}
		apply = func(s *state) bool { return t.hello(s, &h, now) }
	case subjects.KindHeartbeat:
		var hb wire.Heartbeat
		if err := wire.Unmarshal(data, &hb); err != nil {
			return fmt.Errorf("decode heartbeat: %w", err)
		}
		apply = func(s *state) bool { return t.heartbeat(s, &hb, now) }
	case subjects.KindGoodbye:
		var g wire.Goodbye
		if err := wire.Unmarshal(data, &g); err != nil {
			return fmt.Errorf("decode goodbye: %w", err)
		}
		apply = func(s *state) bool { return goodbye(s, &g) }
	default:
		return fmt.Errorf("unknown presence kind %q", kind)
	}
	t.update(ag, now, apply)
	return nil
}

// update applies f to ag's state under the lock and reports a change when f
// says it was significant or the status moved. A bare lease renewal is not
// reported: at thousands of agents it would be thousands of events a second.
func (t *Tracker) update(ag subjects.Agent, now time.Time, f func(*state) bool) {
	t.mu.Lock()
	s := t.agents[ag]
	if s == nil {
		s = &state{reported: Offline}
		t.agents[ag] = s
	}
	significant := f(s)
	t.expect(s, now)
	if !significant && t.status(s, now) == s.reported {
		t.mu.Unlock()
		return
	}
	t.notifyLocked(ag, s, now)
}

// hello makes h's instance the live one.
func (t *Tracker) hello(s *state, h *wire.Hello, now time.Time) bool {
	if h.Instance == "" || s.isSuperseded(h.Instance) || s.gone && h.Instance == s.instance {
		return false
	}
	if s.instance != "" && s.instance != h.Instance {
		s.supersede(s.instance)
	}
	s.instance, s.hello, s.gone, s.paused = h.Instance, h, false, h.Paused
	s.lastSeen, s.leaseUntil = now, now.Add(t.lease(time.Duration(h.HeartbeatMs)*time.Millisecond))
	s.onConn(h.Conn, now)
	return true
}

// heartbeat renews the lease of the live instance. A heartbeat from another
// instance takes over only when the live one has lapsed or left (the control
// plane may have missed the newcomer's hello).
func (t *Tracker) heartbeat(s *state, hb *wire.Heartbeat, now time.Time) bool {
	if hb.Instance == "" || s.isSuperseded(hb.Instance) || s.gone && hb.Instance == s.instance {
		return false
	}
	if hb.Instance != s.instance {
		if s.instance != "" && !s.gone && now.Before(s.leaseUntil) {
			return false
		}
		if s.instance != "" {
			s.supersede(s.instance)
		}
		s.instance, s.hello, s.gone = hb.Instance, nil, false
	}
	s.lastSeen, s.paused = now, hb.Paused
	s.leaseUntil = now.Add(t.lease(time.Duration(hb.IntervalMs) * time.Millisecond))
	s.onConn(hb.Conn, now)
	return s.hello == nil && s.reported != Online // a new instance, first seen
}

// onConn records that the live instance published on c (nil: an agent that
// does not say); a connection already reported closed ends the lease now.
func (s *state) onConn(c *wire.ConnRef, now time.Time) {
	if c == nil {
		s.conn = wire.ConnRef{}
		return
	}
	s.conn = *c
	for _, old := range s.closed {
		if old == *c {
			s.leaseUntil = now
		}
	}
}

// goodbye marks the live instance gone; a goodbye of any other is ignored.
func goodbye(s *state, g *wire.Goodbye) bool {
	if g.Instance == "" || g.Instance != s.instance || s.gone {
		return false
	}
	s.gone = true
	return true
}

func (s *state) isSuperseded(inst string) bool {
	for _, old := range s.superseded {
		if old == inst {
			return true
		}
	}
	return false
}

func (s *state) supersede(inst string) {
	s.superseded = append(s.superseded, inst)
	if len(s.superseded) > supersededMemory {
		s.superseded = s.superseded[1:]
	}
}

// lease is how long an agent with heartbeat interval ivl stays online.
func (t *Tracker) lease(ivl time.Duration) time.Duration {
	if ivl <= 0 {
		ivl = DefaultInterval
	}
	return max(t.cfg.MinLease, leaseBeats*ivl)
}

// status derives s's status at now.
func (t *Tracker) status(s *state, now time.Time) Status {
	switch {
	case s == nil || s.gone || s.lastSeen.IsZero():
		return Offline
	case now.Before(s.leaseUntil):
		return Online
	case now.Before(s.leaseUntil.Add(t.cfg.Window)):
		return Reconnecting
	}
	return Offline
}

func (t *Tracker) entry(s *state, now time.Time) Entry {
	if s == nil {
		return Entry{Status: Offline}
	}
	return Entry{
		Status:     t.status(s, now),
		LastSeen:   s.lastSeen,
		LeaseUntil: s.leaseUntil,
		Instance:   s.instance,
		Hello:      s.hello,
		Paused:     s.paused,
	}
}

// notifyLocked wakes waiters and calls OnChange callbacks with ag's entry. It
// is called with t.mu held and releases it.
func (t *Tracker) notifyLocked(ag subjects.Agent, s *state, now time.Time) {
	e := t.entry(s, now)
	s.reported = e.Status
	close(t.changed)
	t.changed = make(chan struct{})
	cbs := t.onChange
	t.mu.Unlock()
	for _, f := range cbs {
		f(ag, e)
	}
}

// run applies messages in order and reports statuses that changed by the
// passing of time (lapsed leases, closed reconnect windows).
func (t *Tracker) run(msgs <-chan *nats.Msg) {
	defer close(t.done)
	tick := time.NewTicker(t.cfg.Sweep)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case m := <-msgs:
			t.handle(m)
		case <-tick.C:
			t.sweepOnce()
		}
	}
}

// sweepOnce reports the statuses that time changed since they were last
// reported. It looks at every agent only once something is due (t.due), so
// an idle fleet of thousands costs a comparison a sweep, not a scan.
func (t *Tracker) sweepOnce() {
	now := t.cfg.Now()
	t.mu.RLock()
	idle := now.Before(t.due) && !now.Before(t.lastScan)
	t.mu.RUnlock()
	if idle {
		return
	}
	t.mu.Lock()
	now = t.cfg.Now()
	t.scans++
	t.lastScan = now
	var lapsed []subjects.Agent
	due := now.Add(maxSweepGap)
	for ag, s := range t.agents {
		if t.status(s, now) != s.reported {
			lapsed = append(lapsed, ag)
		}
		if next, ok := t.nextChange(s, now); ok && next.Before(due) {
			due = next
		}
	}
	t.due = due
	t.mu.Unlock()
	for _, ag := range lapsed {
		// Now again: a call may have lapsed the lease since the scan.
		now := t.cfg.Now()
		t.update(ag, now, func(s *state) bool { return t.status(s, now) != s.reported })
	}
}

// nextChange is when s's status will change if nothing is heard: its lease
// lapsing, or its reconnect window closing, on now's clock (a seeded lease
// has no monotonic reading). ok is false for an offline agent.
func (t *Tracker) nextChange(s *state, now time.Time) (next time.Time, ok bool) {
	switch t.status(s, now) {
	case Online:
		next = s.leaseUntil
	case Reconnecting:
		next = s.leaseUntil.Add(t.cfg.Window)
	default:
		return time.Time{}, false
	}
	return now.Add(next.Sub(now)), true
}

// expect makes the first sweep at or after s's next change look at every
// agent, when that change comes before every other due. Whatever changes a
// lease, lastSeen or gone calls it, with t.mu held.
func (t *Tracker) expect(s *state, now time.Time) {
	if next, ok := t.nextChange(s, now); ok && next.Before(t.due) {
		t.due = next
	}
}

// Messages is how many presence messages (hello, heartbeat, goodbye) the
// tracker has received from NATS since it started: their rate is the cost
// of presence on the control plane.
func (t *Tracker) Messages() uint64 { return t.messages.Load() }

// Counts is how many known agents have each status now.
func (t *Tracker) Counts() map[Status]int {
	now := t.cfg.Now()
	out := map[Status]int{}
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, s := range t.agents {
		out[t.status(s, now)]++
	}
	return out
}

// disconnectEvent is the part of a NATS server's disconnect event
// (server.DisconnectEventMsg) that presence reads.
type disconnectEvent struct {
	Server struct {
		ID string `json:"id"`
	} `json:"server"`
	Client struct {
		ID      uint64   `json:"id"`
		Account string   `json:"acc"`
		Tags    []string `json:"tags"` // of the credentials: subjects.AgentTags
	} `json:"client"`
}

// ObserveDisconnect applies one disconnect event (JSON, as the server
// publishes it on subjects.AccountDisconnects(account)). The agent is the
// one its credentials' tags name (subjects.AgentTags). An event of another
// account, or of a connection whose credentials have no tags (the control
// plane's own), changes nothing; a malformed one is an error.
func (t *Tracker) ObserveDisconnect(account string, data []byte) error {
	var ev disconnectEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return fmt.Errorf("decode disconnect event: %w", err)
	}
	if ev.Client.Account != account || len(ev.Client.Tags) == 0 {
		return nil
	}
	ag, err := subjects.ParseAgentTags(ev.Client.Tags)
	if err != nil {
		return fmt.Errorf("disconnect event: %w", err)
	}
	if ev.Server.ID == "" || ev.Client.ID == 0 {
		return fmt.Errorf("disconnect event of %s names no connection", ag)
	}
	t.Disconnected(ag, wire.ConnRef{Server: ev.Server.ID, ID: ev.Client.ID})
	return nil
}

// Disconnected reports that ag's NATS connection conn closed. When the live
// instance last published on conn, its lease ends now: it is reconnecting
// until it says hello on a new connection, offline a window later. Any
// other connection (an old one, a refused second daemon's) changes nothing
// but is remembered, in case its hello is still on the way.
func (t *Tracker) Disconnected(ag subjects.Agent, conn wire.ConnRef) {
	now := t.cfg.Now()
	t.mu.Lock()
	s := t.agents[ag]
	if s == nil {
		s = &state{reported: Offline}
		t.agents[ag] = s
	}
	s.closed = append(s.closed, conn)
	if len(s.closed) > closedMemory {
		s.closed = s.closed[1:]
	}
	if s.conn != conn || s.gone || !now.Before(s.leaseUntil) {
		t.mu.Unlock()
		return
	}
	s.leaseUntil = now
	t.expect(s, now)
	t.notifyLocked(ag, s, now)
}

// Get returns what is known of ag now; an agent never heard of is offline.
func (t *Tracker) Get(ag subjects.Agent) Entry {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.entry(t.agents[ag], t.cfg.Now())
}

// EachSeen calls f with every agent the tracker has heard of (or was
// seeded with) and when it last heard from it, zero if never. f runs with
// the tracker locked: it must not block or call the tracker.
func (t *Tracker) EachSeen(f func(ag subjects.Agent, lastSeen time.Time)) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for ag, s := range t.agents {
		f(ag, s.lastSeen)
	}
}

// Seed records what a previous run knew (the stored lastSeen and hello), so
// an agent seen shortly before a restart is reconnecting, not offline, until
// it is heard from. It never overrides fresher knowledge.
func (t *Tracker) Seed(ag subjects.Agent, lastSeen time.Time, hello *wire.Hello) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.agents[ag]; s != nil && !s.lastSeen.Before(lastSeen) {
		return
	}
	s := &state{lastSeen: lastSeen, leaseUntil: lastSeen, hello: hello}
	if hello != nil {
		s.instance = hello.Instance
	}
	now := t.cfg.Now()
	s.reported = t.status(s, now)
	t.expect(s, now)
	t.agents[ag] = s
}

// Lapse ends the lease of ag's instance inst now, because a call found
// nobody serving it (NATS no responders): the agent's connection is gone
// even if its last heartbeat is recent. A later heartbeat or hello of the
// instance makes it online again; another instance is not touched.
func (t *Tracker) Lapse(ag subjects.Agent, inst string) {
	now := t.cfg.Now()
	t.mu.Lock()
	s := t.agents[ag]
	if s == nil || inst == "" || s.instance != inst || !now.Before(s.leaseUntil) {
		t.mu.Unlock()
		return
	}
	s.leaseUntil = now
	t.expect(s, now)
	t.notifyLocked(ag, s, now)
}

// Forget drops ag (it was revoked); it is offline from now on.
func (t *Tracker) Forget(ag subjects.Agent) {
	t.mu.Lock()
	s, ok := t.agents[ag]
	if !ok {
		t.mu.Unlock()
		return
	}
	delete(t.agents, ag)
	s.reported = Offline
	close(t.changed)
	t.changed = make(chan struct{})
	cbs := t.onChange
	t.mu.Unlock()
	for _, f := range cbs {
		f(ag, Entry{Status: Offline})
	}
}

// OnChange registers f to be called after every change of an agent's status
// or instance (a hello, a goodbye, a lease lapsing or renewed after a lapse);
// heartbeats that only renew a lease are not reported. f runs on the tracker's
// goroutines and must not block.
func (t *Tracker) OnChange(f func(ag subjects.Agent, e Entry)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onChange = append(t.onChange, f)
}

// WaitStatus waits until ag's status is want, or ctx ends.
func (t *Tracker) WaitStatus(ctx context.Context, ag subjects.Agent, want Status) error {
	for {
		t.mu.RLock()
		got := t.status(t.agents[ag], t.cfg.Now())
		ch := t.changed
		t.mu.RUnlock()
		if got == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("agent %s is %s, waited for %s: %w", ag, got, want, ctx.Err())
		case <-ch:
		case <-time.After(t.cfg.Sweep):
		}
	}
}
