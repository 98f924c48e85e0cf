package agent

import (
	"sync"
	"time"
)

// A slow uplink (a hotel's Wi-Fi, a phone's hotspot) drains a process's
// output replies slowly, and the connection's pings and pongs wait behind
// them: at 256 KB/s a 1 MiB proc.read reply holds them up for 4 s, and
// the agent (a ping unanswered for wire.PingInterval) or the server
// declares the link stale and drops a working connection. So the agent
// sizes its proc.read replies to about replyDrain of its uplink: the pings
// never wait longer than that.
//
// It learns the uplink's rate from the reads themselves: the control plane
// asks for a process's next output as soon as it has the previous reply,
// so the time from sending a reply to the next read of the same process is
// what the reply took to cross (plus a round trip and the control plane's
// own time, which makes the estimate low, never high).
const (
	// replyDrain is how long one output reply may take to cross the uplink
	// (by an estimate that counts a round trip in: less in fact). The pings
	// give up after 5 s without an answer (wire.PingInterval).
	replyDrain = 2 * time.Second
	// firstReply caps replies before any rate is known: a second of a
	// 256 KB/s uplink. On a fast link the first sample lifts the cap.
	firstReply = 256 << 10
	// minReply is the least a reply may carry, and the least that counts
	// as a sample (a smaller one mostly times the round trip).
	minReply = 64 << 10
	// staleSample: a read this long after the previous reply was not
	// waiting for it (a reader came back later): no sample.
	staleSample = 5 * time.Second
	// maxTracked bounds the replies remembered (one per process read).
	maxTracked = 1024
)

// uplink estimates the agent's uplink from its output replies and sizes
// the next ones. The zero value is ready; it is safe for concurrent use.
type uplink struct {
	mu   sync.Mutex
	rate float64 // bytes per second; 0: no sample yet
	last map[string]sentReply
}

// sentReply is a reply of n bytes sent at at.
type sentReply struct {
	at time.Time
	n  int
}

// limit is called when a read of process id arrives at now, asking for at
// most asked bytes: it takes the time since the previous reply for id as
// a sample, and returns what this reply may carry.
func (u *uplink) limit(id string, now time.Time, asked int) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if prev, ok := u.last[id]; ok && prev.n >= minReply {
		if gap := now.Sub(prev.at); gap > 0 && gap < staleSample {
			sample := float64(prev.n) / gap.Seconds()
			if u.rate == 0 {
				u.rate = sample
			} else {
				u.rate = (u.rate + sample) / 2
			}
		}
	}
	capped := firstReply
	if u.rate > 0 {
		capped = max(minReply, int(u.rate*replyDrain.Seconds()))
	}
	return min(asked, capped)
}

// sent records a reply of n bytes of output for process id, sent at now.
func (u *uplink) sent(id string, now time.Time, n int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.last == nil || len(u.last) >= maxTracked {
		u.last = map[string]sentReply{}
	}
	u.last[id] = sentReply{at: now, n: n}
}

// forget drops what is remembered of process id (it closed).
func (u *uplink) forget(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.last, id)
}
