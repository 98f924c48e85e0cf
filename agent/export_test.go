package agent

import "time"

// DriveLinks replaces the agent's link watcher (call it before Run) with
// one the test drives: each call of the returned function is one change
// the watcher saw.
func (a *Agent) DriveLinks() func(slept time.Duration, removed, added []string) {
	idle := func() linkSource {
		return linkSource{
			now:   func() (time.Time, time.Duration) { return time.Time{}, 0 },
			addrs: func() ([]string, error) { return nil, nil },
			tick:  func(time.Duration) (<-chan time.Time, func()) { return nil, func() {} },
		}
	}
	h := newLinkHub(idle, time.Hour)
	a.links = h
	return func(slept time.Duration, removed, added []string) {
		// Run subscribes a moment after it says hello: wait for it.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			h.mu.Lock()
			n := len(h.subs)
			h.mu.Unlock()
			if n > 0 || time.Now().After(deadline) {
				break
			}
		}
		h.publish(linkEvent{Slept: slept, Removed: removed, Added: added})
	}
}
