package controlplane

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
	"github.com/outposthq/outpost/pipe"
	"github.com/outposthq/outpost/presence"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// pipeWatchInterval is how often the hub checks the presence of the
// agents its pipes go to.
const pipeWatchInterval = 250 * time.Millisecond

// pipeHub is the control plane's end of every pipe (a TCP connection to a
// port of an agent's machine; package pipe). It sends port.open through a
// target, like any op (so a session routes it to its active backend),
// takes the agents' frames with one subscription,
// agent.*.*.pipe.<owner>.*, and sends its own on each agent's rpc subject.
// A pipe whose agent goes offline, or connects again (frames may have been
// lost), is reset at once: never a hang.
type pipeHub struct {
	nc       *nats.Conn
	presence *presence.Tracker
	owner    string
	sub      *nats.Subscription

	mu     sync.Mutex
	closed bool
	open   map[string]*hubPipe
	heard  map[subjects.Agent]time.Time // the latest frame from each agent
	unack  map[subjects.Agent]int       // data bytes received, not yet acknowledged
	flight map[subjects.Agent]*pipe.Flight
	stop   chan struct{}
	done   chan struct{}
}

// hubPipe is one open pipe of the hub: frames over NATS (conn), or a bulk
// connection of its own (stream; conn is nil).
type hubPipe struct {
	conn   *pipe.Conn
	stream *pipe.Stream
	ws     string

	mu     sync.Mutex
	agent  string      // the agent that answered the open; "" until then
	seen   string      // the agent whose frames arrived first
	rpc    string      // its rpc subject
	hello  *wire.Hello // its presence at the open
	opened time.Time
	acks   bool // the agent acknowledges data frames: they are paced (flightOf)
}

func newPipeHub(nc *nats.Conn, pr *presence.Tracker) (*pipeHub, error) {
	h := &pipeHub{nc: nc, presence: pr, owner: nuid.Next(), open: map[string]*hubPipe{},
		heard:  map[subjects.Agent]time.Time{},
		unack:  map[subjects.Agent]int{},
		flight: map[subjects.Agent]*pipe.Flight{},
		stop:   make(chan struct{}), done: make(chan struct{})}
	subj, err := subjects.AllPipes(h.owner)
	if err != nil {
		return nil, err
	}
	if h.sub, err = nc.Subscribe(subj, h.deliver); err != nil {
		return nil, fmt.Errorf("pipes: subscribe: %w", err)
	}
	// Frames are bounded by the windows the hub grants, not by count.
	_ = h.sub.SetPendingLimits(-1, 1<<30)
	go h.watch()
	return h, nil
}

// dial opens a pipe to port on the target's machine. The target's call
// decides which agent (a session's active backend); errors are the call's
// (503 offline, 502 connection_refused, ...).
func (h *pipeHub) dial(ctx context.Context, ws string, t target, port int) (net.Conn, error) {
	return h.dialWith(ctx, ws, t, port, nil)
}

// pipeBulk asks for a pipe on a bulk connection: the ticket the agent
// claims it with, and where the claimed connection arrives.
type pipeBulk struct {
	ticket string
	conns  <-chan net.Conn
}

// dialWith is dial; with b, the agent is asked to carry the pipe on a bulk
// connection made with b's ticket (it falls back to frames over NATS when
// it cannot).
func (h *pipeHub) dialWith(ctx context.Context, ws string, t target, port int, b *pipeBulk) (net.Conn, error) {
	id := "p" + rand.Text()
	p := &hubPipe{ws: ws}
	p.conn = pipe.New(pipe.Config{
		ID: id, WithID: true,
		Send:   p.send(h),
		Window: wire.PipeGrant,
		OnClose: func() {
			h.mu.Lock()
			if h.open[id] == p {
				delete(h.open, id)
			}
			h.mu.Unlock()
		},
		Local:  pipe.Addr{Net: "pipe", Str: "control-plane"},
		Remote: pipe.Addr{Net: "pipe", Str: fmt.Sprintf("port %d", port)},
	})
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, wire.Errorf(wire.CodeUnavailable, wire.ReasonStarting, "the control plane is stopping")
	}
	h.open[id] = p
	h.mu.Unlock()
	req := &wire.PortOpenRequest{Port: port, Owner: h.owner, Pipe: id, Window: wire.PipeGrant}
	if b != nil {
		req.Ticket = b.ticket
	}
	var res wire.PortOpenResult
	err := t.Call(ctx, wire.OpPortOpen, req, &res, rpc.CallOptions{})
	if err != nil {
		h.forget(id)
		return nil, err
	}
	ag := subjects.Agent{Workspace: ws, ID: t.LastAgent()}
	subj, err := ag.RPC()
	if err != nil {
		h.forget(id)
		return nil, wire.Errorf(wire.CodeInternal, "", "pipe: %v", err)
	}
	if res.Bulk {
		return h.takeStream(ctx, id, p, ag, subj, b)
	}
	p.mu.Lock()
	p.agent, p.rpc, p.hello, p.opened = ag.ID, subj, h.presence.Get(ag).Hello, time.Now()
	forged := p.seen != "" && p.seen != ag.ID
	p.mu.Unlock()
	// The agent granted res.Window: the control plane's own grant, or the
	// 1 MiB of agents before sized windows (0: that default).
	win := res.Window
	if win == 0 {
		win = wire.PipeWindow
	}
	if forged || win < 0 || win > wire.MaxPipeWindow {
		p.conn.Reset(errors.New("pipe frames from another agent, or a window out of range"))
		return nil, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "port.open: the agent's pipe did not match")
	}
	p.conn.SetPeerWindow(win)
	if res.Acks {
		p.mu.Lock()
		p.acks = true
		p.mu.Unlock()
	}
	return p.conn, nil
}

// takeStream makes pipe id, whose agent said it is on the bulk connection
// b asked for, a stream on that connection. Only the agent the ticket was
// issued to can have made it (bulkHub.claim); the frames pipe p made for
// the open is dropped.
func (h *pipeHub) takeStream(ctx context.Context, id string, p *hubPipe, ag subjects.Agent, subj string, b *pipeBulk) (net.Conn, error) {
	if b == nil {
		h.forget(id)
		return nil, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "port.open: the agent says it is on a bulk connection nobody asked for")
	}
	c, err := arrived(ctx, b.conns)
	if err != nil {
		h.forget(id)
		if errors.Is(err, errBulkLate) {
			return nil, wire.Errorf(wire.CodeUnavailable, "", "port.open: %v", err)
		}
		return nil, err
	}
	q := &hubPipe{ws: p.ws, agent: ag.ID, rpc: subj, hello: h.presence.Get(ag).Hello, opened: time.Now()}
	cfg := pipe.StreamConfig{OnClose: func() {
		h.mu.Lock()
		if h.open[id] == q {
			delete(h.open, id)
		}
		h.mu.Unlock()
	}}
	if g := gatherOf(c); g != nil {
		cfg.Gather = g.Gather
	}
	q.stream = pipe.NewStream(c, cfg)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		q.stream.Reset(errors.New("the control plane is stopping"))
		h.forget(id)
		return nil, wire.Errorf(wire.CodeUnavailable, wire.ReasonStarting, "the control plane is stopping")
	}
	h.open[id] = q
	h.mu.Unlock()
	p.conn.Reset(errors.New("the pipe is on a bulk connection")) // p never got the agent's subject: nothing is sent
	return q.stream, nil
}

// end resets the pipe, whichever way it is carried.
func (p *hubPipe) end(why error) {
	if p.stream != nil {
		p.stream.Reset(why)
		return
	}
	p.conn.Reset(why)
}

// send publishes the control plane's frames to the pipe's agent.
func (p *hubPipe) send(h *pipeHub) func(b []byte) error {
	return func(b []byte) error {
		p.mu.Lock()
		subj, agent, acks := p.rpc, p.agent, p.acks
		p.mu.Unlock()
		if subj == "" {
			return errors.New("pipe not open")
		}
		if acks && wire.KindOf(b, true) == wire.FrameData {
			// At most a flight of data ahead of the requests on the
			// agent's one connection.
			h.flightOf(subjects.Agent{Workspace: p.ws, ID: agent}).Take(len(b))
		}
		return h.nc.Publish(subj, b)
	}
}

// flightOf paces the data frames to ag.
func (h *pipeHub) flightOf(ag subjects.Agent) *pipe.Flight {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.flight[ag]
	if f == nil {
		f = pipe.NewFlight()
		h.flight[ag] = f
	}
	return f
}

func (h *pipeHub) forget(id string) {
	h.mu.Lock()
	p := h.open[id]
	delete(h.open, id)
	h.mu.Unlock()
	if p != nil {
		p.end(errors.New("open failed"))
	}
}

// deliver hands an agent's frame to its pipe. A frame from an agent other
// than the one the pipe was opened on is dropped (an agent can publish
// only on its own subjects, so the subject names the sender).
func (h *pipeHub) deliver(m *nats.Msg) {
	ag, _, id, err := subjects.ParsePipe(m.Subject)
	if err != nil {
		return
	}
	if len(m.Data) == 9 && wire.KindOf(m.Data, false) == wire.FrameAck {
		// The agent received that many bytes of this connection's data.
		if f, err := wire.DecodeFrame(m.Data, false); err == nil {
			h.mu.Lock()
			h.heard[ag] = time.Now()
			h.mu.Unlock()
			h.flightOf(ag).Ack(int(min(f.Off, wire.PipeFlightMax)))
		}
		return
	}
	h.mu.Lock()
	p := h.open[id]
	ack := 0
	if p != nil {
		h.heard[ag] = time.Now()
	}
	if len(m.Data) > 0 && wire.FrameKind(m.Data[0]) == wire.FrameData {
		h.unack[ag] += len(m.Data)
		if h.unack[ag] >= wire.PipeAckEvery {
			ack, h.unack[ag] = h.unack[ag], 0
		}
	}
	h.mu.Unlock()
	if ack > 0 {
		h.ackAgent(ag, ack)
	}
	if p == nil || p.ws != ag.Workspace || p.conn == nil {
		return
	}
	p.mu.Lock()
	switch {
	case p.agent != "" && p.agent != ag.ID, p.seen != "" && p.seen != ag.ID:
		p.mu.Unlock()
		return
	case p.seen == "":
		p.seen = ag.ID
	}
	p.mu.Unlock()
	f, err := wire.DecodeFrame(m.Data, false)
	if err != nil {
		p.conn.Reset(err)
		return
	}
	p.conn.Deliver(f)
}

// pipeSilence is how long an agent whose presence lapsed (or that went
// offline) may go without a frame before its pipes are reset: frames
// still arriving say it is there (a heartbeat can wait behind a lot of
// data). An agent that stops cleanly resets its pipes itself.
const pipeSilence = 5 * time.Second

// ackAgent tells ag that n more bytes of its data frames arrived: its
// connection-wide pacing (wire.PipeFlight).
func (h *pipeHub) ackAgent(ag subjects.Agent, n int) {
	subj, err := ag.RPC()
	if err != nil {
		return
	}
	_ = h.nc.Publish(subj, wire.AppendFrame(nil, wire.Frame{Kind: wire.FrameAck, Pipe: h.owner, Off: uint64(n)}, true))
}

// watch resets the pipes of agents that connected again (frames may have
// been lost), or lapsed and went silent.
func (h *pipeHub) watch() {
	defer close(h.done)
	t := time.NewTicker(pipeWatchInterval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		ps := make([]*hubPipe, 0, len(h.open))
		for _, p := range h.open {
			ps = append(ps, p)
		}
		heard := make(map[subjects.Agent]time.Time, len(h.heard))
		for ag, at := range h.heard {
			if time.Since(at) > time.Minute {
				delete(h.heard, ag)
				delete(h.flight, ag) // made again by its next frame or ack
			}
			heard[ag] = at
		}
		h.mu.Unlock()
		for _, p := range ps {
			p.mu.Lock()
			agent, hello, opened := p.agent, p.hello, p.opened
			p.mu.Unlock()
			if agent == "" {
				continue
			}
			ag := subjects.Agent{Workspace: p.ws, ID: agent}
			e := h.presence.Get(ag)
			last := heard[ag]
			if opened.After(last) {
				last = opened
			}
			switch {
			case e.Hello != hello:
				p.end(wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentReconnecting, "agent %s reconnected: the connection's frames may be lost", agent))
			case e.Status != presence.Online && time.Since(last) > pipeSilence:
				p.end(wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentOffline, "agent %s went offline", agent))
			}
		}
	}
}

// count is the number of open pipes.
func (h *pipeHub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.open)
}

// close resets every pipe and stops the hub. It is idempotent.
func (h *pipeHub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	ps := make([]*hubPipe, 0, len(h.open))
	for _, p := range h.open {
		ps = append(ps, p)
	}
	h.mu.Unlock()
	for _, p := range ps {
		p.end(errors.New("the control plane is stopping"))
	}
	close(h.stop)
	<-h.done
	_ = h.sub.Unsubscribe()
}
