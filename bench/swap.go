package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane/client"
)

// swapReaders is how many clients read through the session while it swaps.
const swapReaders = 4

// benchSwap: hot-swap of a session between the env's agent ("laptop") and
// a pool agent ("cloud") while swapReaders clients read through the
// session in a loop. Swap latency is the HTTP round trip of POST .../swap;
// its baseline is GET of the same session under the same load (HTTP plus
// one KV read). Every read failure during the swaps is counted.
func benchSwap(ctx context.Context, e *env) ([]row, error) {
	stopCloud, err := startPoolAgent(ctx, e, "cloud1", "cloud")
	if err != nil {
		return nil, err
	}
	defer stopCloud()
	id := fmt.Sprintf("swap-%d", time.Now().UnixNano())
	if _, err := e.cl.CreateSession(ctx, e.ws, client.CreateSessionRequest{ID: id, Active: "laptop",
		Backends: map[string]client.SessionBackend{
			"laptop": {Kind: client.KindAgent, Agent: e.id},
			"cloud":  {Kind: client.KindPool, Pool: "cloud"},
		}}); err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	defer e.cl.DeleteSession(context.WithoutCancel(ctx), e.ws, id)

	idle, _, err := swapLoop(ctx, e, id, 1, nil)
	if err != nil {
		return nil, err
	}
	load := startReaders(ctx, e.cl.Session(e.ws, id))
	swaps, gets, err := swapLoop(ctx, e, id, uint64(e.n+1), load)
	reads, failed, readLat, firstErr := load.stop()
	if err != nil {
		return nil, err
	}
	sp50, gp50 := swaps.pct(50), gets.pct(50)
	failedNote := fmt.Sprintf("%d of %d", failed, reads)
	if firstErr != nil {
		failedNote += fmt.Sprintf(" (first: %v)", firstErr)
	}
	return []row{
		{Name: "session swap p50, idle", Outpost: ms(idle.pct(50))},
		{Name: fmt.Sprintf("session swap p50 (HTTP, %d readers; vs GET session)", swapReaders), Outpost: ms(sp50), Baseline: ms(gp50),
			Ratio: ratio(sp50, gp50), Goal: "≤ 5 ms", Met: yesNo(sp50 <= 5*time.Millisecond)},
		{Name: "session swap p99", Outpost: ms(swaps.pct(99)), Baseline: ms(gets.pct(99)), Ratio: ratio(swaps.pct(99), gets.pct(99))},
		{Name: fmt.Sprintf("reads failed during %d swaps", len(swaps)), Outpost: failedNote, Goal: "0", Met: yesNo(failed == 0)},
		{Name: "session read p50 during swaps", Outpost: ms(readLat.pct(50))},
		{Name: "session read p99 during swaps", Outpost: ms(readLat.pct(99))},
	}, nil
}

// swapLoop swaps the session back and forth e.n times, starting at epoch,
// each swap with the epoch it expects, and measures a GET of the session
// after each. With load, each swap waits until swapReaders more reads
// finished since the previous one, so that swaps and reads interleave
// (a swap storm with no read in between measures nothing a user does).
func swapLoop(ctx context.Context, e *env, id string, epoch uint64, load *readers) (swaps, gets latencies, err error) {
	backends := [2]string{"laptop", "cloud"}
	for i := 0; i < e.n; i++ {
		if load != nil {
			if err := load.waitReads(ctx, swapReaders); err != nil {
				return nil, nil, err
			}
		}
		start := time.Now()
		s, err := e.cl.SwapSession(ctx, e.ws, id, backends[epoch%2], epoch)
		if err != nil {
			return nil, nil, fmt.Errorf("swap %d: %w", epoch, err)
		}
		swaps = append(swaps, time.Since(start))
		if epoch++; s.Epoch != epoch {
			return nil, nil, fmt.Errorf("swap to epoch %d: epoch %d", epoch, s.Epoch)
		}
		start = time.Now()
		if _, err := e.cl.GetSession(ctx, e.ws, id); err != nil {
			return nil, nil, fmt.Errorf("get session: %w", err)
		}
		gets = append(gets, time.Since(start))
	}
	return swaps, gets, nil
}

// readers loop over GET {session}/capabilities until stopped.
type readers struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	reads    atomic.Int64
	failed   atomic.Int64
	mu       sync.Mutex
	lat      latencies
	firstErr error
}

func startReaders(ctx context.Context, sess *client.Target) *readers {
	ctx, cancel := context.WithCancel(ctx)
	r := &readers{cancel: cancel}
	for range swapReaders {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for ctx.Err() == nil {
				start := time.Now()
				_, err := sess.Capabilities(ctx)
				took := time.Since(start)
				if ctx.Err() != nil {
					return // a read cut short by stop is not a failure
				}
				r.record(took, err)
			}
		}()
	}
	return r
}

// waitReads waits until n more reads finished.
func (r *readers) waitReads(ctx context.Context, n int64) error {
	target := r.reads.Load() + n
	for r.reads.Load() < target {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

func (r *readers) record(took time.Duration, err error) {
	r.reads.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed.Add(1)
		if r.firstErr == nil {
			r.firstErr = err
		}
		return
	}
	r.lat = append(r.lat, took)
}

// stop ends the readers, waits for them and returns what they saw.
func (r *readers) stop() (reads, failed int64, lat latencies, firstErr error) {
	r.cancel()
	r.wg.Wait()
	return r.reads.Load(), r.failed.Load(), r.lat, r.firstErr
}

// startPoolAgent enrolls agent id into pool and runs it in this process
// until the returned stop is called.
func startPoolAgent(ctx context.Context, e *env, id, pool string) (stop func(), err error) {
	ident, err := e.enroll(ctx, client.EnrollmentTokenRequest{Agent: id, Pool: pool})
	if err != nil {
		return nil, err
	}
	root := filepath.Join(e.dir, id)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	a, err := agent.New(agent.Config{Identity: ident, Root: root, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Journal: root + ".writes"}) // as env's agent
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	stop = func() { cancel(); <-done }
	deadline := time.Now().Add(15 * time.Second)
	for {
		ag, err := e.cl.GetAgent(ctx, e.ws, id)
		if err == nil && ag.Status == "online" {
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, errors.Join(fmt.Errorf("agent %s not online", id), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
