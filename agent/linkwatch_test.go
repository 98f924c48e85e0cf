package agent

import (
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// step is one look of the detector: how far the wall and monotonic clocks
// moved since the previous look, the addresses then (nil: unreadable),
// and whether the OS had reported a change.
type step struct {
	wall, mono time.Duration
	addrs      []string
	notified   bool
	want       linkEvent
	wantOK     bool
}

func TestLinkDetector(t *testing.T) {
	wifi := []string{"wlan0 192.168.1.20"}
	both := []string{"eth0 10.0.0.5", "wlan0 192.168.1.20"}
	s := time.Second
	tests := []struct {
		name  string
		steps []step
	}{
		{"steady ticks", []step{{wall: s, mono: s, addrs: wifi}, {wall: s, mono: s, addrs: wifi}, {wall: s + 200*time.Millisecond, mono: s + 200*time.Millisecond, addrs: wifi}}},
		{"suspend: the wall clock runs on, the monotonic one stops (Linux, macOS)", []step{
			{wall: 90 * s, mono: s, addrs: wifi, want: linkEvent{Slept: 89 * s}, wantOK: true},
			{wall: s, mono: s, addrs: wifi}}},
		{"a sleep shorter than clockJump is nothing", []step{{wall: 3 * s, mono: s, addrs: wifi}}},
		{"a clock stepped back counts", []step{{wall: -10 * s, mono: s, addrs: wifi, want: linkEvent{Slept: 11 * s}, wantOK: true}}},
		{"a tick far too late (Windows' monotonic clock counts sleep; a paused VM)", []step{
			{wall: 60 * s, mono: 60 * s, addrs: wifi, want: linkEvent{Slept: 59 * s}, wantOK: true}}},
		{"a tick a few seconds late (a busy machine) is nothing", []step{{wall: 8 * s, mono: 8 * s, addrs: wifi}}},
		{"an address appears", []step{{wall: s, mono: s, addrs: both, want: linkEvent{Added: []string{"eth0 10.0.0.5"}}, wantOK: true}}},
		{"the network goes, then comes back", []step{
			{wall: s, mono: s, addrs: []string{}, want: linkEvent{Removed: wifi}, wantOK: true},
			{wall: s, mono: s, addrs: []string{}},
			{wall: s, mono: s, addrs: wifi, want: linkEvent{Added: wifi}, wantOK: true}}},
		{"another network after a sleep", []step{
			{wall: 600 * s, mono: s, addrs: []string{"wlan0 172.20.3.9"},
				want: linkEvent{Slept: 599 * s, Removed: wifi, Added: []string{"wlan0 172.20.3.9"}}, wantOK: true}}},
		{"unreadable addresses change nothing, and are not taken for none", []step{
			{wall: s, mono: s, addrs: nil},
			{wall: s, mono: s, addrs: wifi}}},
		{"a notification without an address change is a route change", []step{
			{wall: 100 * time.Millisecond, mono: 100 * time.Millisecond, addrs: wifi, notified: true, want: linkEvent{Routes: true}, wantOK: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newLinkDetector(time.Second)
			wall := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			mono := 5 * time.Hour
			if _, ok := d.look(wall, mono, wifi, false); ok {
				t.Fatal("the first look reported a change")
			}
			for i, st := range tt.steps {
				wall, mono = wall.Add(st.wall), mono+st.mono
				got, ok := d.look(wall, mono, st.addrs, st.notified)
				if ok != st.wantOK || !sameEvent(got, st.want) {
					t.Errorf("step %d: got %+v (%v), want %+v (%v)", i, got, ok, st.want, st.wantOK)
				}
			}
		})
	}
}

func sameEvent(a, b linkEvent) bool {
	return a.Slept == b.Slept && a.Routes == b.Routes && slices.Equal(a.Removed, b.Removed) && slices.Equal(a.Added, b.Added)
}

func TestDiffSorted(t *testing.T) {
	tests := []struct {
		old, cur, removed, added []string
	}{
		{nil, nil, nil, nil},
		{[]string{"a", "c"}, []string{"a", "c"}, nil, nil},
		{[]string{"a", "c"}, []string{"b", "c", "d"}, []string{"a"}, []string{"b", "d"}},
		{[]string{"a", "b"}, nil, []string{"a", "b"}, nil},
		{nil, []string{"x"}, nil, []string{"x"}},
	}
	for _, tt := range tests {
		r, a := diffSorted(tt.old, tt.cur)
		if !slices.Equal(r, tt.removed) || !slices.Equal(a, tt.added) {
			t.Errorf("diffSorted(%q, %q) = %q, %q; want %q, %q", tt.old, tt.cur, r, a, tt.removed, tt.added)
		}
	}
}

func TestInterfaceAddrs(t *testing.T) {
	addrs, err := interfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(addrs) {
		t.Errorf("not sorted: %q", addrs)
	}
	for _, a := range addrs {
		name, ip, ok := strings.Cut(a, " ")
		parsed := net.ParseIP(ip)
		if !ok || name == "" || parsed == nil || !parsed.IsGlobalUnicast() {
			t.Errorf("address %q: want \"iface ip\" with a global unicast ip", a)
		}
	}
}

// fakeLinks is a linkSource the test moves by hand.
type fakeLinks struct {
	mu      sync.Mutex
	wall    time.Time
	mono    time.Duration
	addrs   []string
	tick    chan time.Time
	notes   chan struct{}
	started int
	stopped chan struct{}
}

func newFakeLinks(addrs ...string) *fakeLinks {
	return &fakeLinks{
		wall: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), mono: time.Hour, addrs: addrs,
		tick: make(chan time.Time), notes: make(chan struct{}, 1), stopped: make(chan struct{}, 8),
	}
}

func (f *fakeLinks) source() linkSource {
	f.mu.Lock()
	f.started++
	f.mu.Unlock()
	return linkSource{
		now: func() (time.Time, time.Duration) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.wall, f.mono
		},
		addrs: func() ([]string, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return slices.Clone(f.addrs), nil
		},
		tick: func(time.Duration) (<-chan time.Time, func()) {
			return f.tick, func() { f.stopped <- struct{}{} }
		},
		notify: func(stop <-chan struct{}) (<-chan struct{}, func()) { return f.notes, func() {} },
	}
}

// advance moves the clocks and sets the addresses.
func (f *fakeLinks) advance(wall, mono time.Duration, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wall, f.mono = f.wall.Add(wall), f.mono+mono
	if addrs != nil {
		f.addrs = addrs
	}
}

func TestLinkHub(t *testing.T) {
	f := newFakeLinks("wlan0 192.168.1.20")
	h := newLinkHub(f.source, time.Second)
	got1, got2 := make(chan linkEvent, 4), make(chan linkEvent, 4)
	unsub1 := h.subscribe(func(ev linkEvent) { got1 <- ev })
	unsub2 := h.subscribe(func(ev linkEvent) { got2 <- ev })
	recv := func(ch chan linkEvent, what string) linkEvent {
		t.Helper()
		select {
		case ev := <-ch:
			return ev
		case <-time.After(5 * time.Second):
			t.Fatalf("no event: %s", what)
			return linkEvent{}
		}
	}

	// Once a tick is taken the watcher has made its first look; once a
	// second one is, it is done with the first tick's.
	f.tick <- time.Time{}
	f.tick <- time.Time{}
	// A wake: both subscribers hear of it on the next tick.
	f.advance(10*time.Minute, time.Second)
	f.tick <- time.Time{}
	for _, ch := range []chan linkEvent{got1, got2} {
		if ev := recv(ch, "wake"); ev.Slept != 10*time.Minute-time.Second || ev.Network() {
			t.Errorf("after a wake: %+v", ev)
		}
	}

	// An OS notification makes it look without waiting for the tick.
	f.advance(200*time.Millisecond, 200*time.Millisecond)
	f.notes <- struct{}{}
	if ev := recv(got1, "route change"); !ev.Routes || ev.Slept != 0 {
		t.Errorf("after a notification: %+v", ev)
	}
	<-got2

	// One watcher for both; the last unsubscribe stops it.
	unsub1()
	f.advance(time.Second, time.Second, "eth0 10.0.0.5")
	f.tick <- time.Time{}
	if ev := recv(got2, "address change"); !slices.Equal(ev.Removed, []string{"wlan0 192.168.1.20"}) || !slices.Equal(ev.Added, []string{"eth0 10.0.0.5"}) {
		t.Errorf("after an address change: %+v", ev)
	}
	select {
	case ev := <-got1:
		t.Errorf("an unsubscribed callback got %+v", ev)
	default:
	}
	unsub2()
	unsub2() // idempotent
	select {
	case <-f.stopped:
	default:
		t.Error("the ticker was not stopped with the last subscriber")
	}
	if f.started != 1 {
		t.Errorf("%d watchers started for two subscribers, want 1", f.started)
	}
	// A new subscriber starts a new watcher.
	unsub3 := h.subscribe(func(linkEvent) {})
	unsub3()
	if f.started != 2 {
		t.Errorf("%d watchers started after a resubscribe, want 2", f.started)
	}
}
