package agent

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/wire"
)

// DriveLinks replaces the agent's link watcher (call it before Run) with
// one the test drives: each call of the returned function is one change
// the watcher saw; one with nothing slept, removed or added is a change of
// routes alone.
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
		ev := linkEvent{Slept: slept, Removed: removed, Added: added}
		ev.Routes = !ev.Network() && slept == 0
		h.publish(ev)
	}
}

// JudgePaths sets, after DriveLinks, how often a change of routes alone may
// force a reconnect, and replaces the agent's judgement of whether a change
// broke its connection's path with gone's answer.
func (a *Agent) JudgePaths(routeEvery time.Duration, gone func() string) {
	a.links.routeEvery = routeEvery
	a.links.pathGone = func(*nats.Conn, linkEvent) string { return gone() }
}

// SetAttachLease sets how long an attach stream lives without a frame of
// the control plane, until the returned restore.
func SetAttachLease(d time.Duration) (restore func()) {
	old := attachLease
	attachLease = d
	return func() { attachLease = old }
}

// CheckThenHandle runs op with body the way dispatch does — the owner's
// policy checked, then the handler — with gap called in between: what a
// concurrent change (a link swapped) between the two does.
func (a *Agent) CheckThenHandle(op string, body any, gap func()) error {
	req, err := wire.NewRequest(op, body, time.Now().Add(10*time.Second))
	if err != nil {
		return err
	}
	call := a.inspect(req)
	if err := a.checkPolicy(req, call); err != nil {
		return wireError(err)
	}
	gap()
	h := a.handler(op)
	_, release, err := h(context.Background(), req)
	if release != nil {
		release()
	}
	if err != nil {
		return wireError(err)
	}
	return nil
}

// ShortenClaim makes the claim's probes, its warning deadline and its
// pauses short for the test's length.
func ShortenClaim(t interface{ Cleanup(func()) }, probe, claim, pause time.Duration) {
	p, c, r := probeTimeout, claimTimeout, claimRetryMax
	probeTimeout, claimTimeout, claimRetryMax = probe, claim, pause
	t.Cleanup(func() { probeTimeout, claimTimeout, claimRetryMax = p, c, r })
}
