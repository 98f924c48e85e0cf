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
// refused request did not run. A request at a newer epoch than work that
// holds the fence (AdmitHeld) waits, until its deadline or start-by time
// at most, for that work to end (then deadline_passed, not run); if a
// request at a still newer epoch came meanwhile, it is then
// conflict/fenced, not run.
func Admit(req *wire.Request, now time.Time, fence *Fence) error {
	_, err := admit(req, now, fence, nil)
	return err
}

// AdmitHeld is Admit for a request whose work must end before a request
// of its session at a newer epoch runs on this agent (a restore's writes,
// which must never overwrite what was written at the newer epoch): once
// admitted it holds the session's fence at its epoch until release is
// called. A request at a newer epoch then calls stop, with
// conflict/superseded, and waits for release before it runs. Outside a
// session it is Admit, and release does nothing.
func AdmitHeld(req *wire.Request, now time.Time, fence *Fence, stop func(error)) (release func(), err error) {
	return admit(req, now, fence, stop)
}

// admit is Admit, holding the fence with stop set. A request that waited
// for held work is checked again: it never starts past its deadline or its
// start-by time (by then its caller may have answered 503, not run).
func admit(req *wire.Request, now time.Time, fence *Fence, stop func(error)) (release func(), err error) {
	if err := admitTimes(req, now); err != nil {
		return nil, err
	}
	limit := req.DeadlineTime()
	if req.StartBy != 0 {
		// Late counts in whole milliseconds: past StartBy is StartBy+1.
		if sb := time.UnixMilli(req.StartBy + 1); sb.Before(limit) {
			limit = sb
		}
	}
	release, waited, err := fence.enter(req.Session, req.Epoch, limit, stop)
	if err != nil || !waited {
		return release, err
	}
	if err := admitTimes(req, time.Now()); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// admitTimes refuses a request past its deadline or start-by time.
func admitTimes(req *wire.Request, now time.Time) error {
	switch {
	case req.Expired(now):
		return wire.Errorf(wire.CodeDeadlineExceeded, wire.ReasonDeadlinePassed,
			"request %s (%s) arrived after its deadline", req.ID, req.Op)
	case req.Late(now):
		return wire.Errorf(wire.CodeDeadlineExceeded, wire.ReasonDeadlinePassed,
			"request %s (%s) arrived after its start-by time; its caller was told this agent is unavailable", req.ID, req.Op)
	}
	return nil
}

// maxFencedSessions bounds the sessions whose epoch a Fence remembers.
const maxFencedSessions = 8192

// Fence remembers the highest epoch an agent saw per session and refuses
// older ones, so a stale control-plane replica cannot act on the machine
// after a swap. Work admitted with a hold (AdmitHeld) ends before any
// request at a newer epoch of its session runs. The zero Fence is ready;
// it is safe for concurrent use.
type Fence struct {
	mu     sync.Mutex
	epochs map[string]uint64
	holds  map[string]map[*hold]struct{} // by session
}

// hold is admitted work of a session at an epoch, running.
type hold struct {
	epoch   uint64
	stop    func(error)
	stopped bool
	done    chan struct{} // closed by release
}

// Check admits (session, epoch) if epoch is at least the highest seen, and
// raises the mark; requests outside sessions pass. A raised mark waits
// for the work holding the fence at an older epoch to end.
func (f *Fence) Check(session string, epoch uint64) error {
	_, _, err := f.enter(session, epoch, time.Time{}, nil)
	return err
}

// fenced is the refusal of a request at epoch when its session is at
// seen on this agent: it did not run.
func fenced(session string, seen, epoch uint64) error {
	return wire.Errorf(wire.CodeConflict, wire.ReasonFenced,
		"session %s is at epoch %d on this agent; a request with epoch %d is stale", session, seen, epoch)
}

// enter admits (session, epoch) as Check does, waiting until deadline at
// most (zero: no limit) for older holds to end (waited says it did), and
// with stop set holds the fence at epoch until release.
func (f *Fence) enter(session string, epoch uint64, deadline time.Time, stop func(error)) (release func(), waited bool, err error) {
	if session == "" {
		return func() {}, false, nil
	}
	f.mu.Lock()
	if f.epochs == nil {
		f.epochs = map[string]uint64{}
	}
	seen, ok := f.epochs[session]
	if ok && epoch < seen {
		f.mu.Unlock()
		return nil, false, fenced(session, seen, epoch)
	}
	if !ok && len(f.epochs) >= maxFencedSessions {
		for k := range f.epochs { // forget one at random: its fence restarts at this epoch
			if len(f.holds[k]) == 0 {
				delete(f.epochs, k)
				break
			}
		}
	}
	f.epochs[session] = epoch
	// Work held at an older epoch is told to stop, and waited for.
	var older []*hold
	for h := range f.holds[session] {
		if h.epoch < epoch {
			older = append(older, h)
			if !h.stopped {
				h.stopped = true
				h.stop(wire.Errorf(wire.CodeConflict, wire.ReasonSuperseded,
					"session %s moved to epoch %d on this agent while a request at epoch %d ran; it stopped part way", session, epoch, h.epoch))
			}
		}
	}
	var mine *hold
	if stop != nil {
		mine = &hold{epoch: epoch, stop: stop, done: make(chan struct{})}
		if f.holds == nil {
			f.holds = map[string]map[*hold]struct{}{}
		}
		if f.holds[session] == nil {
			f.holds[session] = map[*hold]struct{}{}
		}
		f.holds[session][mine] = struct{}{}
	}
	f.mu.Unlock()
	release = func() {}
	if mine != nil {
		release = sync.OnceFunc(func() { f.release(session, mine) })
	}
	if err := waitHolds(older, deadline); err != nil {
		release()
		return nil, true, err
	}
	if mine != nil || len(older) > 0 {
		// A newer epoch came while this one waited: it runs not at all
		// (held or not: run now, it would run after that epoch's work).
		f.mu.Lock()
		seen := f.epochs[session]
		stopped := seen > epoch || (mine != nil && mine.stopped)
		f.mu.Unlock()
		if stopped {
			release()
			return nil, len(older) > 0, fenced(session, seen, epoch)
		}
	}
	return release, len(older) > 0, nil
}

// release ends hold h of session.
func (f *Fence) release(session string, h *hold) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.holds[session], h)
	if len(f.holds[session]) == 0 {
		delete(f.holds, session)
	}
	close(h.done)
}

// waitHolds waits for every hold of hs to be released, until deadline at
// most (zero: no limit); past it, the request that waited did not run.
func waitHolds(hs []*hold, deadline time.Time) error {
	var timeout <-chan time.Time
	if !deadline.IsZero() && len(hs) > 0 {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	for _, h := range hs {
		select {
		case <-h.done:
		case <-timeout:
			return wire.Errorf(wire.CodeDeadlineExceeded, wire.ReasonDeadlinePassed,
				"work of the session at epoch %d did not end before the deadline or start-by time of a request at a newer one", h.epoch)
		}
	}
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
