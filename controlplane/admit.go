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
// be in their connect exchange with the embedded server at once (from the
// server's INFO until it answers the CONNECT). nats-server creates a
// client and checks its JWT under its server lock: 10,000 agents
// connecting at once queued there, past their 10 s connect timeout, and
// their retries grew the queue (issue 20). Past this many, an agent waits
// before the server sees it, holding nothing of the server's, and leaves
// the queue when it gives up.
const natsAdmitConcurrent = 32

// natsAdmitWait bounds an agent's wait for admission; past it the upgrade
// is answered 503 (the agent tries again after its backoff). An agent's
// own connect timeout (10 s) is shorter: it gives up first, and its
// leaving ends the wait.
const natsAdmitWait = 30 * time.Second

// admission bounds how many connections are in their connect exchange at
// once. The zero value admits none: use newAdmission.
type admission struct {
	slots chan struct{}

	waiting  atomic.Int64  // waiting for a slot now
	admitted atomic.Uint64 // given a slot since the start
	peak     atomic.Int64  // the most slots held at once
	held     atomic.Int64
}

func newAdmission(n int) *admission {
	return &admission{slots: make(chan struct{}, n)}
}

// acquire waits for a slot until ctx ends; release (called once, or more:
// later calls do nothing) gives it back.
func (a *admission) acquire(ctx context.Context) (release func(), err error) {
	a.waiting.Add(1)
	defer a.waiting.Add(-1)
	select {
	case a.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	a.admitted.Add(1)
	h := a.held.Add(1)
	for p := a.peak.Load(); h > p && !a.peak.CompareAndSwap(p, h); p = a.peak.Load() {
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			a.held.Add(-1)
			<-a.slots
		})
	}, nil
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
	return AdmissionStats{Waiting: a.waiting.Load(), Admitted: a.admitted.Load(), Peak: a.peak.Load(), Limit: cap(a.slots)}
}

// answeredConn is the embedded server's side of an in-process connection,
// as the relay reads it: once the server has sent two lines (its INFO,
// then its answer to the client's CONNECT and PING: PONG, +OK or -ERR),
// the connect exchange is over and done is called, once. nats.go sends
// CONNECT and PING together and waits for the answer before anything
// else, so nothing else comes from the server in between.
type answeredConn struct {
	net.Conn
	lines int
	done  func()
}

func (c *answeredConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.lines < 2 {
		c.lines += bytes.Count(p[:n], []byte{'\n'})
		if c.lines >= 2 {
			c.done()
		}
	}
	return n, err
}
