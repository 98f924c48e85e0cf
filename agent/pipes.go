package agent

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/internal/bulkconn"
	"github.com/outposthq/outpost/pipe"
	"github.com/outposthq/outpost/wire"
)

// pipes are the agent's open pipes: each one TCP connection to a local
// port (dialPort), carried to the control plane as frames. The agent
// publishes a pipe's frames on agent.<ws>.<agent>.pipe.<owner>.<pipe>, its
// own subjects, and takes the control plane's on its rpc subject (frames
// begin with wire.PipeMagic, requests never do): no permission beyond
// those every agent has. A pipe ends when both directions did, on a reset
// from either side, when its session moved on (fence), and when the
// connection to NATS drops (frames may have been lost).
type pipes struct {
	a *Agent

	mu     sync.Mutex
	closed bool
	open   map[string]*agentPipe
	wg     sync.WaitGroup          // each pipe's two copy goroutines, and sweep
	stop   chan struct{}           // ends sweep
	flight map[string]*pipe.Flight // by owner: data sent, not yet acknowledged
	recvd  map[string]int          // by owner: data received, not yet acknowledged
}

// flightOf is the pacing of owner's connection.
func (ps *pipes) flightOf(owner string) *pipe.Flight {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	f := ps.flight[owner]
	if f == nil {
		f = pipe.NewFlight()
		ps.flight[owner] = f
	}
	return f
}

// pipeSweep is how often the agent checks that the control-plane
// connections its pipes go to are still there.
const pipeSweep = 30 * time.Second

// sweep resets the pipes of control-plane connections that are gone (a
// control plane that crashed never sends their resets): a request on one
// pipe subject of each finds no responders once nobody subscribes. The
// control plane takes the request as a credit for offset 0, a no-op, and
// does not answer; a timeout means it is there.
func (ps *pipes) sweep() {
	defer ps.wg.Done()
	t := time.NewTicker(pipeSweep)
	defer t.Stop()
	for {
		select {
		case <-ps.stop:
			return
		case <-t.C:
		}
		bySubj := map[string][]*agentPipe{}
		ps.mu.Lock()
		for _, p := range ps.open {
			owner := p.subj[:strings.LastIndexByte(p.subj, '.')]
			bySubj[owner] = append(bySubj[owner], p)
		}
		ps.mu.Unlock()
		nc := ps.a.conn.Load()
		if nc == nil {
			continue
		}
		probe := wire.AppendFrame(nil, wire.Frame{Kind: wire.FrameCredit}, false)
		for _, group := range bySubj {
			_, err := nc.Request(group[0].subj, probe, 2*time.Second)
			if errors.Is(err, nats.ErrNoResponders) {
				for _, p := range group {
					p.conn.Reset(errors.New("the control plane's connection is gone"))
					p.tcp.Close()
				}
			}
		}
	}
}

// pipeConn is an open pipe's end: frames over NATS (*pipe.Conn) or a bulk
// connection of its own (*pipe.Stream).
type pipeConn interface {
	io.ReadWriter
	CloseWrite() error
	Close() error
	Reset(why error)
	WaitWriteDone()
}

// agentPipe is one open pipe.
type agentPipe struct {
	conn    pipeConn
	frames  *pipe.Conn // conn when it is frames over NATS, else nil
	subj    string     // where its frames go
	owner   string     // the control-plane connection
	tcp     net.Conn
	session string
	epoch   uint64
	port    int // the local port it reaches

	moveOnce sync.Once
	moved    chan struct{} // closed when its session moved on
}

// maxPipes bounds the pipes open at once; more answer unavailable/busy.
const maxPipes = 1024

func newPipes(a *Agent) *pipes {
	return &pipes{a: a, open: map[string]*agentPipe{}, stop: make(chan struct{}), flight: map[string]*pipe.Flight{}, recvd: map[string]int{}}
}

// start starts the sweep; close ends it.
func (ps *pipes) start() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !ps.closed {
		ps.wg.Add(1)
		go ps.sweep()
	}
}

// openOp serves port.open: it connects to the port and starts the pipe.
func (ps *pipes) openOp(ctx context.Context, req *wire.Request) (any, error) {
	var body wire.PortOpenRequest
	if err := req.DecodeBody(&body); err != nil {
		return nil, err
	}
	if err := body.Validate(); err != nil {
		return nil, err
	}
	subj, err := ps.a.id.Pipe(body.Owner, body.Pipe)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "%v", err)
	}
	tcp, err := ps.a.dialPort(ctx, body.Port)
	if err != nil {
		return nil, err
	}
	fl := ps.flightOf(body.Owner)
	// The agent grants the window it was granted: a control plane sizes
	// both (before 4 MiB windows, it checked the agent granted the 1 MiB
	// it did).
	win := body.Window
	if win == 0 {
		win = wire.PipeWindow
	}
	p := &agentPipe{subj: subj, owner: body.Owner, tcp: tcp, session: req.Session, epoch: req.Epoch, port: body.Port, moved: make(chan struct{})}
	if body.Ticket != "" {
		// The control plane asks for a bulk connection: the pipe's bytes
		// go there, not through NATS. Failing that (or soon after a failed
		// one: dialStream), NATS carries them.
		if bulk, r, err := ps.a.bulkDialer().dialStream(ctx, body.Ticket); err != nil {
			ps.a.log.Debug("port stream: no bulk connection, frames over NATS", "port", body.Port, "err", err)
		} else {
			var gather func() func() error
			if g := bulkconn.Under(bulk); g != nil {
				gather = g.Gather
			}
			p.conn = pipe.NewStream(bulk, pipe.StreamConfig{Reader: r, Gather: gather, OnClose: func() { ps.remove(body.Pipe, p) }})
		}
	}
	if p.conn != nil {
		return ps.run(body.Pipe, p, &wire.PortOpenResult{Window: win, Acks: true, Bulk: true})
	}
	p.frames = pipe.New(pipe.Config{
		ID: body.Pipe,
		Send: func(b []byte) error {
			if wire.KindOf(b, false) == wire.FrameData {
				fl.Take(len(b))
			}
			return ps.publish(subj, b)
		},
		Window:     win,
		PeerWindow: win,
		OnClose:    func() { ps.remove(body.Pipe, p) },
		Local:      tcp.RemoteAddr(),
		Remote:     pipe.Addr{Net: "pipe", Str: body.Owner},
	})
	p.conn = p.frames
	return ps.run(body.Pipe, p, &wire.PortOpenResult{Window: win, Acks: true})
}

// run registers the pipe id and starts its copies; res is port.open's
// answer. A pipe that cannot run is closed (its local connection too).
func (ps *pipes) run(id string, p *agentPipe, res *wire.PortOpenResult) (any, error) {
	fail := func(err error) (any, error) {
		p.tcp.Close()
		if s, ok := p.conn.(*pipe.Stream); ok {
			s.Reset(err)
		}
		return nil, err
	}
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return fail(wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentOffline, "agent is stopping"))
	}
	if len(ps.open) >= maxPipes {
		ps.mu.Unlock()
		return fail(wire.Errorf(wire.CodeUnavailable, wire.ReasonBusy, "the agent has %d connections to its ports open; retry", maxPipes))
	}
	if _, dup := ps.open[id]; dup {
		ps.mu.Unlock()
		return fail(wire.Errorf(wire.CodeConflict, wire.ReasonAlreadyExists, "pipe %q is open", id))
	}
	ps.open[id] = p
	ps.wg.Add(2)
	ps.mu.Unlock()
	go func() { defer ps.wg.Done(); ps.upstream(p) }()
	go func() { defer ps.wg.Done(); ps.downstream(p) }()
	return res, nil
}

// publish sends one frame of a pipe on the serving connection.
func (ps *pipes) publish(subj string, b []byte) error {
	nc := ps.a.conn.Load()
	if nc == nil {
		return nats.ErrConnectionClosed
	}
	return nc.Publish(subj, b)
}

// copyBufs are the buffers of the local side's reads.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, wire.PipeChunk); return &b }}

// upstream carries what the local service sends to the control plane,
// then half-closes.
func (ps *pipes) upstream(p *agentPipe) {
	var err error
	if s, ok := p.conn.(*pipe.Stream); ok {
		_, err = s.ReadFrom(p.tcp) // reads into its own frame buffer
	} else {
		buf := copyBufs.Get().(*[]byte)
		_, err = io.CopyBuffer(p.conn, onlyReader{p.tcp}, *buf)
		copyBufs.Put(buf)
	}
	if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, pipe.ErrReset) {
		p.conn.Reset(err)
		return
	}
	_ = p.conn.CloseWrite()
}

// downstream carries what the control plane sends to the local service,
// half-closes it on the control plane's EOF, and ends the pipe.
func (ps *pipes) downstream(p *agentPipe) {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	_, err := io.CopyBuffer(onlyWriter{p.tcp}, onlyReader{p.conn}, *buf)
	select {
	case <-p.moved:
		// The session moved on: the local side is closed, the control
		// plane was told EOF; take what it still sends until its EOF.
		_, err = io.CopyBuffer(io.Discard, onlyReader{p.conn}, *buf)
	default:
	}
	if err == nil {
		if cw, ok := p.tcp.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}
	if err != nil {
		p.conn.Reset(err)
	}
	// Wait for the local side's end (upstream's CloseWrite or its reset)
	// before closing: a service may answer after its client's EOF.
	ps.waitUpstreamDone(p)
	p.tcp.Close()
	p.conn.Close()
}

// waitUpstreamDone returns once the local service ended its side: the
// pipe's EOF was sent, or the pipe was reset.
func (ps *pipes) waitUpstreamDone(p *agentPipe) { p.conn.WaitWriteDone() }

// remove forgets a finished pipe.
func (ps *pipes) remove(id string, p *agentPipe) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.open[id] == p {
		delete(ps.open, id)
	}
}

// deliver hands a frame from the control plane to its pipe; frames of
// pipes that ended are dropped.
func (ps *pipes) deliver(data []byte) {
	f, err := wire.DecodeFrame(data, true)
	if err != nil {
		ps.a.log.Warn("bad pipe frame", "err", err)
		return
	}
	if f.Kind == wire.FrameAck {
		ps.flightOf(f.Pipe).Ack(int(min(f.Off, wire.PipeFlightMax)))
		return
	}
	ps.mu.Lock()
	p := ps.open[f.Pipe]
	ack := 0
	if p != nil && p.frames != nil && f.Kind == wire.FrameData {
		// The control plane paces its data frames to this agent by
		// these acknowledgements (PortOpenResult.Acks).
		ps.recvd[p.owner] += len(data)
		if ps.recvd[p.owner] >= wire.PipeAckEvery {
			ack, ps.recvd[p.owner] = ps.recvd[p.owner], 0
		}
	}
	ps.mu.Unlock()
	if ack > 0 {
		_ = ps.publish(p.subj, wire.AppendFrame(nil, wire.Frame{Kind: wire.FrameAck, Off: uint64(ack)}, false))
	}
	if p != nil && p.frames != nil {
		p.frames.Deliver(f)
	}
}

// fence ends, cleanly, the pipes of session opened at an epoch before
// epoch: the session moved on, and its open connections end (new ones go
// where the session points now).
func (ps *pipes) fence(session string, epoch uint64) {
	ps.mu.Lock()
	var moved []*agentPipe
	for _, p := range ps.open {
		if p.session == session && p.epoch < epoch {
			moved = append(moved, p)
		}
	}
	ps.mu.Unlock()
	for _, p := range moved {
		p.moveOnce.Do(func() {
			close(p.moved)
			p.tcp.Close() // upstream ends, and sends EOF; downstream drains
		})
	}
}

// endWhere resets the pipes whose port v refuses and returns how many.
func (ps *pipes) endWhere(v func(port int) error) int {
	ps.mu.Lock()
	var cut []*agentPipe
	var why []error
	for _, p := range ps.open {
		if err := v(p.port); err != nil {
			cut, why = append(cut, p), append(why, err)
		}
	}
	ps.mu.Unlock()
	for i, p := range cut {
		p.conn.Reset(why[i])
		p.tcp.Close()
	}
	return len(cut)
}

// resetAll resets every open pipe: the connection to NATS dropped (frames
// may be lost) or the agent stops.
func (ps *pipes) resetAll(why string) {
	ps.mu.Lock()
	all := make([]*agentPipe, 0, len(ps.open))
	for _, p := range ps.open {
		all = append(all, p)
	}
	ps.mu.Unlock()
	for _, p := range all {
		p.conn.Reset(errors.New(why))
		p.tcp.Close()
	}
}

// close resets every pipe, refuses new ones and waits for their
// goroutines.
func (ps *pipes) close() {
	ps.mu.Lock()
	if !ps.closed {
		close(ps.stop)
	}
	ps.closed = true
	ps.mu.Unlock()
	ps.resetAll("agent stopping")
	ps.wg.Wait()
}

// count is the number of open pipes.
func (ps *pipes) count() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.open)
}

// onlyReader and onlyWriter hide a TCP connection's ReadFrom and WriteTo,
// so io.Copy uses the buffer it is given (splice does not apply to pipes).
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }
