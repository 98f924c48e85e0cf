package rpc

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

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
type replies struct {
	nc    *nats.Conn
	owner string
	sub   *nats.Subscription
	next  atomic.Uint64

	mu      sync.Mutex
	pending map[string]chan *nats.Msg // by full reply subject
}

func newReplies(nc *nats.Conn) (*replies, error) {
	r := &replies{nc: nc, owner: nuid.Next(), pending: make(map[string]chan *nats.Msg)}
	subj, err := subjects.AllReplies(r.owner)
	if err != nil {
		return nil, err
	}
	if r.sub, err = nc.Subscribe(subj, r.deliver); err != nil {
		return nil, fmt.Errorf("rpc: subscribe to replies: %w", err)
	}
	return r, nil
}

// deliver hands a reply to its waiting request; replies nobody waits for
// (late, duplicate or forged) are dropped.
func (r *replies) deliver(m *nats.Msg) {
	r.mu.Lock()
	ch, ok := r.pending[m.Subject]
	if ok {
		delete(r.pending, m.Subject)
	}
	r.mu.Unlock()
	if ok {
		ch <- m // buffered, and removed from pending: never blocks
	}
}

// request publishes data to subj with a fresh reply subject of ag and waits
// for the reply. It returns nats.ErrNoResponders when the server reports that
// nobody subscribes to subj, and ctx's error when ctx ends first.
func (r *replies) request(ctx context.Context, ag subjects.Agent, subj string, data []byte) (*nats.Msg, error) {
	reply, err := ag.Reply(r.owner, strconv.FormatUint(r.next.Add(1), 36))
	if err != nil {
		return nil, err
	}
	ch := make(chan *nats.Msg, 1)
	r.mu.Lock()
	r.pending[reply] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.pending, reply)
		r.mu.Unlock()
	}()
	if err := r.nc.PublishMsg(&nats.Msg{Subject: subj, Reply: reply, Data: data}); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		if len(m.Data) == 0 && m.Header.Get(statusHeader) == noRespondersStatus {
			return nil, nats.ErrNoResponders
		}
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// The status header nats-server puts on the empty message it sends to a
// reply subject when nobody subscribes to the request's subject.
const (
	statusHeader       = "Status"
	noRespondersStatus = "503"
)

func (r *replies) close() error { return r.sub.Unsubscribe() }
