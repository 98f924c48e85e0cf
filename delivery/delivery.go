// Package delivery owns Outpost's delivery rule: a request runs at most
// once, and never after its caller was told it is unavailable. Both sides
// make their decisions here, so the rule is one piece of code; the rule
// itself is written down once, in wire/PROTOCOL.md ("Delivery").
//
//   - The caller stamps every request with a deadline and a start-by time
//     (StartBy). While it waits, it may give up with 503 on the agent's
//     presence lapsing only once the start-by time has passed (GiveUp).
//   - The agent refuses, before running anything, a request past its
//     deadline or its start-by time, or one of a session at an older epoch
//     than it has seen (Admit, Fence): such a request surely did not run.
//   - A caller's error says whether the agent may have run the request
//     (Ambiguous, MaybeDelivered) or surely did not (NotRun); a mutation
//     is never sent again unless it surely did not run.
//
// The package imports only the wire protocol: the agent links it.
package delivery

import (
	"errors"
	"sync"
	"time"

	"github.com/outposthq/outpost/wire"
)

// StartBy is the latest time an agent may start a request sent at now due
// by deadline: now plus the start window, never past the deadline.
func StartBy(now, deadline time.Time, window time.Duration) time.Time {
	if sb := now.Add(window); sb.Before(deadline) {
		return sb
	}
	return deadline
}

// Wait is what a caller knows of the agent while it waits for a reply.
type Wait struct {
	// WasOnline: the agent was online when the call began.
	WasOnline bool
	// Online: it is online now, on the connection it had then (a new
	// hello, on a new connection, is not: the reply cannot reach us).
	Online bool
	// Waited is how long the call has waited.
	Waited time.Duration
	// MinLease is the shortest presence lease: an agent alive is heard
	// from within it.
	MinLease time.Duration
	// StartBy is the request's start-by time.
	StartBy time.Time
}

// GiveUp reports whether the caller may stop waiting at now and answer
// 503: the agent is not there (at once if it was online when the call
// began, else after one minimum lease), and the start-by time has passed,
// after which an agent that wakes with the request refuses it. The request
// then ran before the 503 or never.
func GiveUp(w Wait, now time.Time) bool {
	switch {
	case w.Online:
		return false
	case !w.WasOnline && w.Waited < w.MinLease:
		return false
	}
	return now.UnixMilli() > w.StartBy.UnixMilli() // as the agent's Admit counts
}

// Admit is the agent's check before it runs req at now: a request past its
// deadline or its start-by time is deadline_exceeded/deadline_passed, one
// of a session at an older epoch than fence has seen conflict/fenced. A
// refused request did not run.
func Admit(req *wire.Request, now time.Time, fence *Fence) error {
	switch {
	case req.Expired(now):
		return wire.Errorf(wire.CodeDeadlineExceeded, wire.ReasonDeadlinePassed,
			"request %s (%s) arrived after its deadline", req.ID, req.Op)
	case req.Late(now):
		return wire.Errorf(wire.CodeDeadlineExceeded, wire.ReasonDeadlinePassed,
			"request %s (%s) arrived after its start-by time; its caller was told this agent is unavailable", req.ID, req.Op)
	}
	return fence.Check(req.Session, req.Epoch)
}

// maxFencedSessions bounds the sessions whose epoch a Fence remembers.
const maxFencedSessions = 8192

// Fence remembers the highest epoch an agent saw per session and refuses
// older ones, so a stale control-plane replica cannot act on the machine
// after a swap. The zero Fence is ready; it is safe for concurrent use.
type Fence struct {
	mu     sync.Mutex
	epochs map[string]uint64
}

// Check admits (session, epoch) if epoch is at least the highest seen, and
// raises the mark; requests outside sessions pass.
func (f *Fence) Check(session string, epoch uint64) error {
	if session == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.epochs == nil {
		f.epochs = map[string]uint64{}
	}
	seen, ok := f.epochs[session]
	if ok && epoch < seen {
		return wire.Errorf(wire.CodeConflict, wire.ReasonFenced,
			"session %s is at epoch %d on this agent; a request with epoch %d is stale", session, seen, epoch)
	}
	if !ok && len(f.epochs) >= maxFencedSessions {
		for k := range f.epochs { // forget one at random: its fence restarts at this epoch
			delete(f.epochs, k)
			break
		}
	}
	f.epochs[session] = epoch
	return nil
}

// ambiguousError marks an error after which the agent may have received,
// and run, the request.
type ambiguousError struct{ err *wire.Error }

func (d *ambiguousError) Error() string { return d.err.Error() }
func (d *ambiguousError) Unwrap() error { return d.err }

// Ambiguous marks err as one after which the agent may have run the
// request (a timeout, a lapse while waiting, a lost connection).
func Ambiguous(err *wire.Error) error { return &ambiguousError{err: err} }

// MaybeDelivered reports whether err leaves open that the agent received
// the request (see Ambiguous). Errors where it surely did not (no
// responders, an invalid request) and errors the agent answered are false.
// Mutations must not be replayed when true.
func MaybeDelivered(err error) bool {
	var d *ambiguousError
	return errors.As(err, &d)
}

// NotRun reports whether err proves the agent did not run the request:
// nobody received it (unavailable without MaybeDelivered: no responders),
// or the agent refused it before running it (busy, stopping, fenced, past
// its deadline or start-by time). Only such a mutation may be sent again.
func NotRun(err error) bool {
	if err == nil || MaybeDelivered(err) {
		return false
	}
	return errors.Is(err, wire.ErrUnavailable) ||
		errors.Is(err, &wire.Error{Code: wire.CodeConflict, Reason: wire.ReasonFenced}) ||
		errors.Is(err, &wire.Error{Code: wire.CodeDeadlineExceeded, Reason: wire.ReasonDeadlinePassed})
}
