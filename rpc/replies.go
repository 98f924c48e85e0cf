package rpc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
	"github.com/outposthq/outpost/subjects"
)

// replies routes the replies of every request this client sends. A request
// to agent <ws>/<agent> carries the reply subject
// agent.<ws>.<agent>.reply.<owner>.<n>: under the agent's own subjects, so the
// agent needs no response permission to answer (it has none), and a reply can
// only come from the agent the request went to; one wildcard subscription
// takes them all. owner tells this client's replies from those of other
// control-plane replicas sharing the account.
//
// n is the lowest number no request to that agent is waiting on, so an
// agent answers on as few subjects as it has requests in flight. The
// embedded server keeps, for each connection that has publish permissions,
// a cache of every subject it published on (up to 128); with a new subject
// a request those caches filled with spent reply subjects, some 25 KiB an
// agent that had answered 128 calls. A reply subject comes back into use
// only after its request's reply came (or, for a request that ended
// without one or whose reply named no request, after replyRest); a reply
// that arrives on it for an earlier request (late or duplicate) is told
// apart by its request id (accept). At most maxRestingPerAgent of an
// agent's subjects rest at once: one that never answers (hostile, or
// frozen with its connection up) would otherwise have every call made to it
// in the last minute keep one, each new call scan them all, and its
// connection publish on ever new subjects again.
type replies struct {
	nc    *nats.Conn
	owner string
	sub   *nats.Subscription

	mu      sync.Mutex
	pending map[string]chan *nats.Msg // by full reply subject
	// resting holds the reply subjects of requests that ended without
	// their reply, until when they may be used again: a reply that
	// carries no request id (the server's no-responders status, an
	// agent's answer to a request it could not decode) could still come.
	resting map[string]time.Time
	// restingBy counts the resting subjects of each agent, by the
	// subjects' prefix up to the number.
	restingBy map[string]int
	// sweepAt is the size of resting at which a request's end next drops
	// the subjects whose rest is over: twice what the last sweep left (at
	// least restingSweep), so that sweeps cost O(1) a request.
	sweepAt int
}

// replyBacklog is how many replies a request's wait holds unread, its own
// and those to earlier requests on its subject, before deliver drops one.
const replyBacklog = 64

// replyRest is how long a reply subject whose request ended without its
// reply is left unused.
const replyRest = time.Minute

// restingSweep is the size of resting past which a request's end drops
// the subjects whose rest is over (those of agents called no more).
const restingSweep = 1024

// maxRestingPerAgent bounds how many of an agent's reply subjects rest at
// once. Past it, the subject of a request that ended without its reply is
// used again at once: a reply that names a request is still told apart;
// one that names none could then be taken by the next call to that same
// agent (only that agent publishes there, so it can only mislead calls to
// itself; the server's no-responders status comes at once, not late).
const maxRestingPerAgent = 16

func newReplies(nc *nats.Conn) (*replies, error) {
	r := &replies{nc: nc, owner: nuid.Next(), pending: make(map[string]chan *nats.Msg),
		resting: make(map[string]time.Time), restingBy: make(map[string]int), sweepAt: restingSweep}
	subj, err := subjects.AllReplies(r.owner)
	if err != nil {
		return nil, err
	}
	if r.sub, err = nc.Subscribe(subj, r.deliver); err != nil {
		return nil, fmt.Errorf("rpc: subscribe to replies: %w", err)
	}
	return r, nil
}

// deliver hands a reply to the request waiting on its subject; replies
// nobody waits for (late, duplicate or forged) are dropped, and so is one
// that finds the waiter's buffer full (replyBacklog replies it has not
// read yet, all but one of them not its own).
//
// The send is made under r.mu (it never blocks), so that once a request
// has removed its subject from pending no reply can reach its channel any
// more, and the channel can serve the next request (replyChans).
func (r *replies) deliver(m *nats.Msg) {
	r.mu.Lock()
	if ch, ok := r.pending[m.Subject]; ok {
		select {
		case ch <- m:
		default:
		}
	}
	r.mu.Unlock()
}

// replyChans holds the channels of requests that ended, emptied: each is
// replyBacklog pointers, and every call needs one.
var replyChans = sync.Pool{New: func() any { return make(chan *nats.Msg, replyBacklog) }}

// putReplyChan empties ch, which no reply can reach any more (its subject
// left pending under r.mu), and keeps it for another request.
func putReplyChan(ch chan *nats.Msg) {
	for {
		select {
		case <-ch:
		default:
			replyChans.Put(ch)
			return
		}
	}
}

// claim takes the reply subject of a new request to ag, waited on with
// ch: the lowest number that no request waits on and that is not resting.
// The subjects are made outside r.mu, which every request and every reply
// takes: nothing is allocated under it (an allocation can be made to help
// the collector, and hold the lock meanwhile).
func (r *replies) claim(ag subjects.Agent, ch chan *nats.Msg) (string, error) {
	first, err := ag.Reply(r.owner, "0")
	if err != nil {
		return "", err
	}
	base := strings.TrimSuffix(first, "0")
	cands := []string{first}
	for next := uint64(1); ; {
		r.mu.Lock()
		now := time.Now()
		for _, subj := range cands {
			if _, busy := r.pending[subj]; busy {
				continue
			}
			if until, ok := r.resting[subj]; ok {
				if now.Before(until) {
					continue
				}
				r.unrest(subj)
			}
			r.pending[subj] = ch
			r.mu.Unlock()
			return subj, nil
		}
		r.mu.Unlock()
		cands = cands[:0]
		for range 8 {
			cands = append(cands, base+strconv.FormatUint(next, 36))
			next++
		}
	}
}

// unrest ends the rest of subj. r.mu is held.
func (r *replies) unrest(subj string) {
	delete(r.resting, subj)
	agent := agentOf(subj)
	if r.restingBy[agent]--; r.restingBy[agent] <= 0 {
		delete(r.restingBy, agent)
	}
}

// rest leaves subj unused until replyRest from now, unless its agent has
// maxRestingPerAgent subjects resting already. r.mu is held.
func (r *replies) rest(subj string, now time.Time) {
	if len(r.resting) >= r.sweepAt {
		for s, until := range r.resting {
			if !now.Before(until) {
				r.unrest(s)
			}
		}
		r.sweepAt = max(restingSweep, 2*len(r.resting))
	}
	agent := agentOf(subj)
	if r.restingBy[agent] >= maxRestingPerAgent {
		return
	}
	r.restingBy[agent]++
	r.resting[subj] = now.Add(replyRest)
}

// agentOf is the prefix of reply subject subj up to its number: the same
// for every reply subject of one agent.
func agentOf(subj string) string { return subj[:strings.LastIndexByte(subj, '.')+1] }

// request publishes data to subj with a reply subject of ag and waits for
// the reply that accept takes (nil takes the first): a reply accept turns
// down (take false) is one to an earlier request on the same subject, and
// the wait goes on. A reply taken that does not name the request (own
// false: it names none, or cannot be read) leaves the subject resting, as
// no reply does: the agent may send it again, and nothing would tell the
// repeat from the next call's reply. It returns nats.ErrNoResponders when
// the server reports that nobody subscribes to subj, and ctx's error when
// ctx ends first.
func (r *replies) request(ctx context.Context, ag subjects.Agent, subj string, data []byte, accept func(*nats.Msg) (take, own bool)) (*nats.Msg, error) {
	// The channel has room (replyBacklog) for a burst of replies to
	// earlier requests on this subject (late, or repeated) before this
	// one's: deliver never blocks, so a full channel drops the request's
	// own reply. Only the agent the request went to publishes here, so a
	// burst larger than that can only cost that agent's calls.
	ch := replyChans.Get().(chan *nats.Msg)
	reply, err := r.claim(ag, ch)
	if err != nil {
		replyChans.Put(ch)
		return nil, err
	}
	answered := false
	defer func() {
		r.mu.Lock()
		delete(r.pending, reply)
		if !answered {
			r.rest(reply, time.Now())
		}
		r.mu.Unlock()
		putReplyChan(ch)
	}()
	if err := r.nc.PublishRequest(subj, reply, data); err != nil {
		return nil, err
	}
	for {
		select {
		case m := <-ch:
			if len(m.Data) == 0 && m.Header.Get(statusHeader) == noRespondersStatus {
				answered = true
				return nil, nats.ErrNoResponders
			}
			own := true
			if accept != nil {
				var take bool
				if take, own = accept(m); !take {
					continue
				}
			}
			answered = own
			return m, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// The status header nats-server puts on the empty message it sends to a
// reply subject when nobody subscribes to the request's subject.
const (
	statusHeader       = "Status"
	noRespondersStatus = "503"
)

func (r *replies) close() error { return r.sub.Unsubscribe() }
