package controlplane

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// natsAdmitConcurrent is how many agents' NATS connections over wss may
// be in their connect exchange with the embedded server at once (from
// before the server sees the connection until it answers the CONNECT).
// nats-server creates a client and checks its JWT under its server lock:
// 10,000 agents connecting at once queued there, past their 10 s connect
// timeout, and their retries grew the queue (issue 20). The exchange
// includes a round trip to the agent (the server's INFO, the agent's
// signed CONNECT), so the limit is well above what the lock serves at
// once: with 32, agents on a loaded machine were admitted at about 100 a
// second. Past it, an agent waits before the server sees it, holding
// nothing of the server's, and leaves the queue when it gives up.
const natsAdmitConcurrent = 256

// natsAdmitWait bounds an agent's wait for admission; past it the upgrade
// is answered 503 (the agent tries again after its backoff). An agent's
// own connect timeout (10 s) is shorter: it gives up first, and its
// leaving ends the wait.
const natsAdmitWait = 30 * time.Second

// admission bounds how many connections are in their connect exchange at
// once. The newest waiter is admitted first: an agent gives up on a
// connect after 10 s, and under a queue longer than that, serving the
// oldest first would admit mostly agents about to give up (their
// exchange then wasted); the newest has its whole timeout left. One that
// waited too long tries again, and is then the newest.
type admission struct {
	limit int

	mu    sync.Mutex
	held  int
	stack []chan struct{} // waiters, the newest last; a send hands over a slot

	waiting  atomic.Int64  // waiting for a slot now
	admitted atomic.Uint64 // given a slot since the start
	peak     atomic.Int64  // the most slots held at once
}

func newAdmission(n int) *admission {
	return &admission{limit: n}
}

// acquire waits for a slot until ctx ends; release (called once, or more:
// later calls do nothing) gives it back.
func (a *admission) acquire(ctx context.Context) (release func(), err error) {
	a.mu.Lock()
	if a.held < a.limit {
		a.held++
		a.admitLocked()
		a.mu.Unlock()
		return a.releaser(), nil
	}
	ch := make(chan struct{}, 1)
	a.stack = append(a.stack, ch)
	a.waiting.Add(1)
	a.mu.Unlock()
	defer a.waiting.Add(-1)
	select {
	case <-ch:
		return a.releaser(), nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	for i, w := range a.stack {
		if w == ch {
			a.stack = append(a.stack[:i], a.stack[i+1:]...)
			a.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	a.mu.Unlock()
	// Handed a slot as ctx ended: give it on.
	<-ch
	a.releaser()()
	return nil, ctx.Err()
}

// admitLocked counts an admission (a.mu held, a.held already counting it).
func (a *admission) admitLocked() {
	a.admitted.Add(1)
	if int64(a.held) > a.peak.Load() {
		a.peak.Store(int64(a.held))
	}
}

// releaser is the release of one slot: to the newest waiter, if any.
func (a *admission) releaser() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if n := len(a.stack); n > 0 {
				ch := a.stack[n-1]
				a.stack = a.stack[:n-1]
				a.admitLocked()
				ch <- struct{}{}
				return
			}
			a.held--
		})
	}
}

// AdmissionStats are the admission's counters (Stats).
type AdmissionStats struct {
	// Waiting is the connections waiting to be admitted now.
	Waiting int64 `json:"waiting"`
	// Admitted is the connections admitted since the start.
	Admitted uint64 `json:"admitted"`
	// Peak is the most connections in their connect exchange at once.
	Peak int64 `json:"peak"`
	// Limit is how many may be at once.
	Limit int `json:"limit"`
}

func (a *admission) stats() AdmissionStats {
	return AdmissionStats{Waiting: a.waiting.Load(), Admitted: a.admitted.Load(), Peak: a.peak.Load(), Limit: a.limit}
}

// answeredConn is an agent's connection as the embedded server sees it:
// once the server has written two lines to it (its INFO, then its answer
// to the client's CONNECT and PING: PONG, +OK or -ERR), the connect
// exchange is over and done is called, once; Close calls it too, for a
// connection that ended before. nats.go sends CONNECT and PING together
// and waits for the answer before anything else, so nothing else comes
// from the server in between.
type answeredConn struct {
	net.Conn
	lines int // written by the server's writes, which it serializes
	done  func()
}

func (c *answeredConn) Write(p []byte) (int, error) {
	if c.lines < 2 {
		c.lines += bytes.Count(p, []byte{'\n'})
		if c.lines >= 2 {
			c.done()
		}
	}
	return c.Conn.Write(p)
}

func (c *answeredConn) Close() error {
	err := c.Conn.Close()
	c.done()
	return err
}
