// Live work and the owner's switches: pausing the agent, or reloading a
// policy that forbids more, ends the work already under way that the new
// state refuses — requests in flight (their handlers' contexts canceled),
// open handles (downloads, uploads, archives, snapshots, watches) and port
// pipes. The check that ends them is the one dispatch makes (checkCall),
// so there is still one place where policy meets a call.

package agent

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outposthq/outpost/agent/policy"
	"github.com/outposthq/outpost/wire"
)

// liveTag says what a piece of live work does, for the checks that may end
// it: the op that started it and the fields the policy looks at.
type liveTag struct {
	op   string
	call *callFields // nil for an op whose body the policy does not read
}

// handleTag is the tag of a handle opened by op on path.
func handleTag(op, path string) liveTag {
	return liveTag{op: op, call: &callFields{Path: path}}
}

// verdict says whether live work may go on: nil, or why it ends (a
// *wire.Error or a *policy.Denial).
type verdict func(t liveTag) error

// ended is the cause a live request's context is canceled with.
type ended struct{ err error }

func (e *ended) Error() string { return e.err.Error() }
func (e *ended) Unwrap() error { return e.err }

// inflight are the requests being served, each with the cancel of its
// handler's context.
type inflight struct {
	mu  sync.Mutex
	seq uint64
	m   map[uint64]inflightReq
	// gen counts the endings (pause, reload): a request that registered
	// after an ending began re-checks what that ending checked.
	gen atomic.Uint64
}

type inflightReq struct {
	tag    liveTag
	cancel context.CancelCauseFunc
}

// add registers a request; the returned func forgets it.
func (in *inflight) add(t liveTag, cancel context.CancelCauseFunc) func() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.m == nil {
		in.m = map[uint64]inflightReq{}
	}
	in.seq++
	n := in.seq
	in.m[n] = inflightReq{tag: t, cancel: cancel}
	return func() {
		in.mu.Lock()
		delete(in.m, n)
		in.mu.Unlock()
	}
}

// end cancels the requests v refuses, with its error as the cause.
func (in *inflight) end(v verdict) int {
	in.mu.Lock()
	var cut []func()
	for _, r := range in.m {
		if err := v(r.tag); err != nil {
			cancel := r.cancel
			cut = append(cut, func() { cancel(&ended{err}) })
		}
	}
	in.mu.Unlock()
	for _, c := range cut {
		c()
	}
	return len(cut)
}

// gone remembers, for a while, why handles were ended by the owner's
// switches, so that the next call on one says so instead of "not found".
type gone struct {
	mu sync.Mutex
	m  map[string]goneEntry
}

type goneEntry struct {
	err error
	at  time.Time
}

// goneFor is how long an ended handle's reason is kept.
const goneFor = DefaultTransferIdle

func (g *gone) note(h string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if g.m == nil {
		g.m = map[string]goneEntry{}
	}
	for k, e := range g.m {
		if now.Sub(e.at) > goneFor {
			delete(g.m, k)
		}
	}
	g.m[h] = goneEntry{err: err, at: now}
}

// why is the reason handle h was ended, or nil.
func (g *gone) why(h string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e, ok := g.m[h]; ok && time.Since(e.at) <= goneFor {
		return e.err
	}
	return nil
}

// pausedErr is what a call gets while the agent is paused.
func pausedErr() error {
	return wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentPaused, "the machine's owner paused this agent (outpost agent resume)")
}

// endForPause ends everything under way: requests in flight answer
// agent_paused, handles end (a call on one after the resume says it ended
// with the pause), pipes are reset. Processes started with proc.start keep
// running; their output is kept for when the agent is resumed.
func (a *Agent) endForPause() {
	a.inflight.gen.Add(1)
	reqs := a.inflight.end(func(t liveTag) error {
		if t.op == wire.OpProbe {
			return nil
		}
		return pausedErr()
	})
	handleErr := wire.Errorf(wire.CodeNotFound, "", "ended when the machine's owner paused this agent; open it again")
	handles := a.endHandles(func(liveTag) error { return handleErr })
	pipes := a.pipes.endWhere(func(int) error { return pausedErr() })
	a.attach.endAll("the machine's owner paused this agent") // no more pushed output, no stdin
	a.log.Info("pause ended the work under way", "requests", reqs, "handles", handles, "pipes", pipes)
}

// endForPolicy ends what policy p, just put in force, refuses of the work
// under way; old is the policy it replaced. A snapshot scan or an archive
// being written, which hold what they walked, end when denyPaths changed.
func (a *Agent) endForPolicy(old, p *policy.Policy) {
	if err := a.checkCall(p, wire.OpProcAttach, nil); err != nil {
		a.attach.endAll(err.Error()) // processes switched off: no attach stream either
	}
	if a.files == nil {
		return
	}
	a.inflight.gen.Add(1)
	check := func(t liveTag) error { return a.checkCall(p, t.op, t.call) }
	reqs := a.inflight.end(check)
	denyChanged := !slices.Equal(old.DenyPathsOrNil(), p.DenyPathsOrNil())
	handles := a.endHandles(func(t liveTag) error {
		if err := check(t); err != nil {
			return err
		}
		if denyChanged && (t.op == wire.OpSnapScan || t.op == wire.OpFsArchiveOpen) {
			return &policy.Denial{Rule: "denyPaths", Detail: "denyPaths changed while " + t.op + " of " + t.call.Path + " was open; open it again"}
		}
		return nil
	})
	pipes := a.pipes.endWhere(func(port int) error { return p.AllowPort(port) })
	if reqs+handles+pipes > 0 {
		a.log.Info("the reloaded policy ended work it refuses", "requests", reqs, "handles", handles, "pipes", pipes)
	}
}

// endHandles ends the open handles v refuses and returns how many.
func (a *Agent) endHandles(v verdict) int {
	if a.files == nil {
		return 0
	}
	return a.files.transfers.endWhere(v) + a.files.archives.endWhere(v) + a.files.watches.endWhere(v)
}
