package controlplane

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/hoptrace"
	"github.com/outposthq/outpost/internal/rawio"
	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// Attach streams (wire/PROTOCOL.md "Attach streams"), the control plane's
// end: the agent pushes the process's events on the stream's subject, one
// subscription per stream whose goroutine writes them to the client's
// socket (a slow client stops only its own stream; the agent's flight
// bound keeps what waits small); stdin goes to the agent as numbered
// frames, fire and forget, acknowledged in batches off the keystroke's
// path. A stream goes on a bulk connection the agent makes (a ticket in
// proc.attach, as a port stream's), both ways, with no nats-server on a
// keystroke's path; over NATS when the agent cannot make one. An agent
// without the op gets the proc.read/proc.write loop.
const (
	// attachCreditEvery: the client got this much output since the last
	// credit: tell the agent (a quarter of its flight bound).
	attachCreditEvery = 64 << 10
	// attachPendingMax bounds the stdin bytes sent and not yet
	// acknowledged; the client's frames wait beyond it.
	attachPendingMax = 1 << 20
)

// attachKeepalive is how often a credit goes to the agent, and
// attachSilent how long the agent may go without a frame before the
// stream is taken for lost (variables for tests).
var (
	attachKeepalive = wire.AttachKeepalive * time.Millisecond
	attachSilent    = attachWait + attachMargin
)

// errNoStreams: the agent does not serve proc.attach.
var errNoStreams = errors.New("agent without attach streams")

// pendingWrite is one stdin write sent and not yet acknowledged.
type pendingWrite struct {
	n    uint64
	data []byte
	eof  bool
}

// cpStream is one open attach stream.
type cpStream struct {
	id     string
	agent  atomic.Pointer[string] // the sender allowed, once the open was answered
	rpc    string                 // the agent's rpc subject
	sub    *nats.Subscription
	heard  atomic.Int64  // Unix ns of the agent's last frame
	end    chan struct{} // closed when the agent ended the stream, or after closed
	endOne sync.Once
	closed bool // under attachment.outMu: frames are ignored
	credit int  // output bytes written to the client since the last credit

	// bulk is the bulk connection the stream is on (nil: NATS, sub).
	// Its reader (readBulk) never writes on it: a credit due goes by
	// kick to serveStream, so that neither side's reader waits for the
	// other's.
	bulk  net.Conn
	wsem  chan struct{} // held (buffered, 1) by the writer on bulk; wbuf
	wbuf  []byte
	kick  chan struct{} // a credit is due (buffered, 1)
	rdone chan struct{} // closed when readBulk returned
	spoke bool          // readBulk took a frame of the agent (read after rdone)

	// events is streamFrame's decoded events frame, reused (its chunks
	// and their data): the stream's frames come from one goroutine at a
	// time (readBulk, or the subscription's), each sent on before the next.
	events wire.ProcReadResult
}

// attachCloseWait bounds a bulk stream's close: a write stuck on a full
// socket, and the wait for the agent's end of the connection.
const attachCloseWait = time.Second

func (st *cpStream) finish() { st.endOne.Do(func() { close(st.end) }) }

// streamOutput runs attach streams until the process closed (CloseNormal),
// the client leaves, or an error retrying cannot fix. It returns
// errNoStreams, before anything was sent, for an agent without them.
func (a *attachment) streamOutput(ctx context.Context) (int, string, error) {
	failing := true
	// bulk: ask for streams on bulk connections. A bulk connection that
	// ended before the agent's first frame on it (each credit is answered
	// at once) does not carry this route: the streams after it go over
	// NATS, rather than a new stream and connection at once, again and
	// again, with nothing through.
	bulk := true
	for n := 1; ctx.Err() == nil; n++ {
		// The agent knows a stream by its id alone: random, so that a late
		// close of another attachment's stream never ends this one.
		st, err := a.openStream(ctx, rand.Text(), failing, bulk)
		if ctx.Err() != nil {
			if err == nil {
				a.closeStream(st) // opened as the client left
			}
			break
		}
		if err != nil {
			if we := wire.AsError(err); n == 1 && we.Code == wire.CodeUnsupported && we.Reason == wire.ReasonUnknownOp {
				return 0, "", errNoStreams
			}
			info := client.NewErrorBody(err).Error
			if a.sendControl(attachControl{Type: "error", Error: info}) != nil {
				break
			}
			if !info.Retryable && info.Code != wire.CodeDeadlineExceeded {
				return websocket.CloseInternalError, string(info.Code), nil
			}
			failing = true
			select {
			case <-ctx.Done():
			case <-time.After(attachRetry):
			}
			continue
		}
		failing = false
		closed, lost := a.serveStream(ctx, st)
		a.closeStream(st)
		if st.bulk != nil && !st.spoke {
			bulk = false
		}
		if closed {
			return websocket.CloseNormal, "closed", nil
		}
		if lost && ctx.Err() == nil {
			failing = true
			err := wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentOffline, "the agent sent nothing for %s", attachSilent)
			if a.sendControl(attachControl{Type: "error", Error: client.NewErrorBody(err).Error}) != nil {
				break
			}
		}
	}
	return websocket.CloseGoingAway, "", nil
}

// openStream subscribes, asks the agent for the stream (on a bulk
// connection when bulk), tells the client the cursor when it was failing
// (it learns the agent answers), then sends the first credit (the agent
// pushes from then on) and any stdin not yet acknowledged.
func (a *attachment) openStream(ctx context.Context, id string, failing, bulk bool) (*cpStream, error) {
	st := &cpStream{id: id, end: make(chan struct{})}
	subj, err := subjects.AttachOf(a.ws, a.owner, id)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "", "attach stream: %v", err)
	}
	st.sub, err = a.s.pipeNC.Subscribe(subj, func(m *nats.Msg) { a.onStreamFrame(st, m) })
	if err != nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "", "attach stream: %v", err)
	}
	a.outMu.Lock()
	after := a.after
	a.outMu.Unlock()
	a.mu.Lock()
	writes := a.acked
	a.mu.Unlock()
	req := &wire.ProcAttachRequest{
		ID: a.id, After: after, MaxBytes: a.s.readCap(), Owner: a.owner, Stream: id,
		WritePrefix: a.writePrefix, Writes: writes,
	}
	var wait *bulkWait
	if bulk {
		if ticket, w, withdraw, err := a.s.bulkTicket(ctx, a.ws, a.t); err == nil {
			req.Ticket, wait = ticket, w
			defer withdraw()
		}
	}
	var res wire.ProcAttachResult
	err = a.t.Call(ctx, wire.OpProcAttach, req, &res, rpc.CallOptions{Timeout: procCallTimeout})
	if err == nil {
		ag := subjects.Agent{Workspace: a.ws, ID: a.t.LastAgent()}
		st.rpc, err = ag.RPC()
		st.agent.Store(&ag.ID)
	}
	if err == nil && res.Bulk {
		st.bulk, err = takeBulk(ctx, wait)
	}
	if err != nil {
		_ = st.sub.Unsubscribe()
		return nil, err
	}
	if st.bulk != nil {
		_ = st.sub.Unsubscribe() // every frame of the stream comes on the connection
		st.kick, st.rdone, st.wsem = make(chan struct{}, 1), make(chan struct{}), make(chan struct{}, 1)
		a.s.bulk.mu.Lock()
		h := a.s.bulk.attached
		a.s.bulk.mu.Unlock()
		if h != nil {
			h(st.bulk)
		}
		st.bulk = rawio.Wrap(st.bulk) // a keystroke's write, its echo's read: direct system calls
		go a.readBulk(st)
	}
	st.heard.Store(time.Now().UnixNano())
	if failing {
		if err := a.sendControl(attachControl{Type: "seq", Seq: after}); err != nil {
			a.closeStream(st)
			return nil, err
		}
	}
	a.publish(st, wire.AttachFrame{Kind: wire.AttachCredit, N: after})
	a.mu.Lock()
	a.cur = st
	pend := append([]pendingWrite(nil), a.pending...)
	a.mu.Unlock()
	for _, w := range pend {
		a.sendWrite(st, w)
	}
	return st, nil
}

// takeBulk waits for the bulk connection the agent said it made with
// wait's ticket.
func takeBulk(ctx context.Context, wait *bulkWait) (net.Conn, error) {
	if wait == nil {
		return nil, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "proc.attach: the agent says it is on a bulk connection nobody asked for")
	}
	c, err := arrived(ctx, wait.conn)
	if errors.Is(err, errBulkLate) {
		return nil, wire.Errorf(wire.CodeUnavailable, "", "proc.attach: %v", err)
	}
	return c, err
}

// readBulk takes the agent's frames from the stream's bulk connection
// until it ends (closeStream closes it); the stream then ends.
func (a *attachment) readBulk(st *cpStream) {
	defer close(st.rdone)
	defer st.finish()
	br := bufio.NewReaderSize(st.bulk, 64<<10)
	var buf []byte // each frame's, reused: streamFrame is done with a frame (decoded, copied out) when it returns
	for {
		f, b, err := wire.ReadAttachBulkFrameInto(br, buf, false)
		if err != nil {
			return
		}
		if cap(b) <= 256<<10 {
			buf = b // a larger one (a frame of much output) is not kept for the stream's life
		}
		st.spoke = true
		a.streamFrame(st, f)
	}
}

// serveStream keeps the stream alive until it ends: closed reports the
// process closed, lost that the agent went silent.
func (a *attachment) serveStream(ctx context.Context, st *cpStream) (closed, lost bool) {
	t := time.NewTicker(attachKeepalive)
	defer t.Stop()
	var oldest uint64
	for {
		select {
		case <-ctx.Done():
			return false, false
		case <-st.end:
			a.outMu.Lock()
			closed = a.closedSeen
			a.outMu.Unlock()
			return closed, false
		case <-st.kick: // nil over NATS
			a.outMu.Lock()
			after := a.after
			a.outMu.Unlock()
			a.publish(st, wire.AttachFrame{Kind: wire.AttachCredit, N: after})
			continue
		case <-t.C:
		}
		if time.Since(time.Unix(0, st.heard.Load())) > attachSilent {
			return false, true
		}
		a.outMu.Lock()
		after := a.after
		st.credit = 0
		a.outMu.Unlock()
		a.publish(st, wire.AttachFrame{Kind: wire.AttachCredit, N: after})
		// A write still the oldest unacknowledged a keepalive later (the
		// agent acknowledges on every credit) was lost: send again from it.
		a.mu.Lock()
		var pend []pendingWrite
		if len(a.pending) > 0 && a.pending[0].n == oldest {
			pend = append(pend, a.pending...)
		}
		oldest = 0
		if len(a.pending) > 0 {
			oldest = a.pending[0].n
		}
		a.mu.Unlock()
		for _, w := range pend {
			a.sendWrite(st, w)
		}
	}
}

// closeStream stops taking the stream's frames and tells the agent.
func (a *attachment) closeStream(st *cpStream) {
	a.outMu.Lock()
	st.closed = true
	a.outMu.Unlock()
	a.mu.Lock()
	if a.cur == st {
		a.cur = nil
	}
	a.mu.Unlock()
	if st.bulk != nil {
		// Half-close: what was sent (stdin typed just before) still goes,
		// then the agent's EOF ends the stream there, and the agent closes
		// its side. A write stuck on a full socket gives up, and so does
		// the wait for the agent's EOF, after attachCloseWait.
		_ = st.bulk.SetWriteDeadline(time.Now().Add(attachCloseWait))
		_ = closeWrite(st.bulk)
		_ = st.bulk.SetReadDeadline(time.Now().Add(attachCloseWait))
		<-st.rdone
		st.bulk.Close()
		return
	}
	_ = st.sub.Unsubscribe()
	if st.rpc != "" {
		a.publish(st, wire.AttachFrame{Kind: wire.AttachClose})
	}
}

// onStreamFrame takes one frame of the agent, in the stream's
// subscription goroutine: events go to the client at once.
func (a *attachment) onStreamFrame(st *cpStream, m *nats.Msg) {
	ag, _, _, err := subjects.ParseAttach(m.Subject)
	if want := st.agent.Load(); err != nil || want == nil || ag.ID != *want || ag.Workspace != a.ws {
		return // not (yet) the agent that answered the open
	}
	f, err := wire.DecodeAttachFrame(m.Data, false)
	if err != nil {
		return
	}
	a.streamFrame(st, f)
}

// streamFrame runs one frame of the agent: events go to the client at
// once.
func (a *attachment) streamFrame(st *cpStream, f wire.AttachFrame) {
	st.heard.Store(time.Now().UnixNano())
	switch f.Kind {
	case wire.AttachEvents:
		// Decoded into the last frame's result: every field set again
		// (a map leaves out the zero ones), the chunks' storage kept.
		res := &st.events
		kept := res.Chunks[:cap(res.Chunks)]
		for i := range kept {
			kept[i] = wire.ProcChunk{Data: kept[i].Data[:0]} // nothing of the last frame's but storage
		}
		*res = wire.ProcReadResult{Chunks: kept[:0]}
		if err := wire.Unmarshal(f.Data, res); err != nil {
			st.finish()
			return
		}
		if !keepEvents(res) {
			defer func() { st.events.Chunks = nil }()
		}
		if len(res.Chunks) > 0 {
			hoptrace.Mark(hoptrace.CPOutput)
		}
		a.outMu.Lock()
		defer a.outMu.Unlock()
		if st.closed {
			return
		}
		if res.NextSeq <= a.after && res.ClosedSeq == 0 {
			return // a repeat
		}
		if err := a.send(res, false); err != nil {
			st.finish()
			return
		}
		for _, c := range res.Chunks {
			st.credit += len(c.Data)
		}
		if st.credit >= attachCreditEvery {
			st.credit = 0
			if st.bulk != nil {
				select {
				case st.kick <- struct{}{}:
				default: // one is due already
				}
			} else {
				a.publish(st, wire.AttachFrame{Kind: wire.AttachCredit, N: a.after})
			}
		}
		if res.ClosedSeq != 0 {
			a.closedSeen = true
			st.finish()
		}
	case wire.AttachAck:
		a.acknowledge(f.N, f.Data)
	case wire.AttachEnd:
		st.finish()
	}
}

// keepEvents reports whether res's chunks are small enough to keep for
// the next frame's decoding (a keystroke's echo is): a burst's chunks and
// their data are not kept for the stream's life.
func keepEvents(res *wire.ProcReadResult) bool {
	if len(res.Chunks) > 4 {
		return false
	}
	for _, c := range res.Chunks {
		if cap(c.Data) > 4<<10 {
			return false
		}
	}
	return true
}

// acknowledge drops the writes up to n from those pending; data, when
// present, is write n's error, which the client is told.
func (a *attachment) acknowledge(n uint64, data []byte) {
	a.mu.Lock()
	i := 0
	for ; i < len(a.pending) && a.pending[i].n <= n; i++ {
		a.pendingBytes -= len(a.pending[i].data)
	}
	a.pending = a.pending[i:]
	a.acked = max(a.acked, n)
	a.cond.Broadcast()
	a.mu.Unlock()
	if len(data) == 0 {
		return
	}
	var we wire.Error
	if err := wire.Unmarshal(data, &we); err != nil {
		we = *wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "stdin write %d failed: %v", n, err)
	}
	_ = a.sendControl(attachControl{Type: "error", Error: client.NewErrorBody(&we).Error})
}

// streamStdin queues one stdin write and sends it on the open stream, if
// any (a stream opened later sends what is queued). It waits while
// attachPendingMax bytes are unacknowledged.
func (a *attachment) streamStdin(ctx context.Context, p []byte, eof bool) {
	a.mu.Lock()
	for a.pendingBytes > attachPendingMax && ctx.Err() == nil {
		a.cond.Wait()
	}
	a.writes++
	w := pendingWrite{n: uint64(a.writes), data: p, eof: eof}
	a.pending = append(a.pending, w)
	a.pendingBytes += len(p)
	st := a.cur
	a.mu.Unlock()
	if st != nil {
		a.sendWrite(st, w)
	}
}

func (a *attachment) sendWrite(st *cpStream, w pendingWrite) {
	k := wire.AttachWrite
	if w.eof {
		k = wire.AttachEOF
	}
	a.publish(st, wire.AttachFrame{Kind: k, N: w.n, Data: w.data})
}

func (a *attachment) publish(st *cpStream, f wire.AttachFrame) {
	f.Stream = st.id
	if st.bulk != nil {
		if !st.takeWriter() {
			return // the stream ended, or ends: serveStream finds the agent silent
		}
		st.wbuf = wire.AppendAttachBulkFrame(st.wbuf[:0], f, true)
		_ = st.bulk.SetWriteDeadline(time.Now().Add(bulkIdle))
		_, err := st.bulk.Write(st.wbuf)
		<-st.wsem
		if err != nil {
			_ = st.bulk.SetReadDeadline(time.Now()) // readBulk ends the stream
		}
		return
	}
	_ = a.s.pipeNC.Publish(st.rpc, wire.AppendAttachFrame(nil, f, true))
}

// takeWriter waits for the stream's writer on bulk while the agent is
// heard from: behind a write stuck on a full socket to an agent gone
// silent (no FIN, no RST), neither serveStream (its silence check) nor the
// client's stdin waits for the write's own deadline; serveStream then ends
// the stream as lost, and closeStream ends the write. False when it gave
// up, or the stream ended.
func (st *cpStream) takeWriter() bool {
	select {
	case st.wsem <- struct{}{}:
		return true // free: no timer on a keystroke's path
	default:
	}
	for {
		wait := attachSilent - time.Since(time.Unix(0, st.heard.Load()))
		if wait <= 0 {
			select {
			case st.wsem <- struct{}{}:
				return true
			default:
				return false
			}
		}
		t := time.NewTimer(wait)
		select {
		case st.wsem <- struct{}{}:
			t.Stop()
			return true
		case <-st.end:
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// drainStdin waits until the stdin sent on streams was written (or
// procCallTimeout passed), asking the agent to acknowledge at once: a
// signal or resize then follows the keys typed before it.
func (a *attachment) drainStdin(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, procCallTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { a.mu.Lock(); a.cond.Broadcast(); a.mu.Unlock() })
	defer stop()
	a.mu.Lock()
	st := a.cur
	waiting := len(a.pending) > 0
	a.mu.Unlock()
	if !waiting {
		return
	}
	if st != nil {
		a.outMu.Lock()
		after := a.after
		a.outMu.Unlock()
		a.publish(st, wire.AttachFrame{Kind: wire.AttachCredit, N: after}) // answered with an ack
	}
	a.mu.Lock()
	for len(a.pending) > 0 && ctx.Err() == nil {
		a.cond.Wait()
	}
	a.mu.Unlock()
}
