package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/hoptrace"
	"github.com/outposthq/outpost/internal/rawio"
	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// Attach WebSocket tuning.
const (
	// attachWait is each long-poll read's wait: short, so an agent that
	// died with a read in flight is noticed within attachWait+attachMargin.
	attachWait   = 3 * time.Second
	attachMargin = 2 * time.Second
	// attachPing is how often the server pings the client; a client
	// silent (no frame, no pong) for attachIdle is taken for gone.
	attachPing = 10 * time.Second
	attachIdle = 35 * time.Second
	// attachRetry is the pause between reads while the agent cannot be
	// reached.
	attachRetry = 500 * time.Millisecond
	// attachMaxMessage bounds one message from the client (stdin).
	attachMaxMessage = 1 << 20
)

// attachControl is a JSON text frame of the attach WebSocket, both ways
// (API.md "attach"): resize and signal from the client; exit, seq, output
// (stderr), dropped and error from the server.
type attachControl struct {
	Type     string              `json:"type"`
	Cols     int                 `json:"cols,omitempty"`
	Rows     int                 `json:"rows,omitempty"`
	Signal   string              `json:"signal,omitempty"`
	ExitCode *int                `json:"exitCode,omitempty"`
	TimedOut bool                `json:"timedOut,omitempty"`
	Seq      uint64              `json:"seq,omitempty"`
	Stream   string              `json:"stream,omitempty"`
	Data     []byte              `json:"data,omitempty"`
	Bytes    int64               `json:"bytes,omitempty"`
	Error    *client.ErrorDetail `json:"error,omitempty"`
}

// handleAttach serves GET {target}/processes/{id}/attach: the process's
// output from ?after= as binary frames (stderr as "output" control frames),
// stdin from the client's binary frames, control as JSON text frames,
// until the process closed or either side leaves. Errors before the
// upgrade (bad id, unknown process, offline agent) are ordinary responses.
func (s *Server) handleAttach(w http.ResponseWriter, r *http.Request, t target) error {
	id, err := procID(r)
	if err != nil {
		return err
	}
	after, err := queryUint(r.URL.Query().Get("after"), "after")
	if err != nil {
		return err
	}
	if !websocket.IsUpgrade(r) {
		return wire.Errorf(wire.CodeInvalidArgument, "", "attach is a WebSocket: send Upgrade: websocket")
	}
	if _, err := s.readProc(r, t, &wire.ProcReadRequest{ID: id, After: after, MaxBytes: 1}); err != nil {
		return err
	}
	conn, err := websocket.Accept(rawHijacker{w}, r)
	if err != nil {
		var he *websocket.HandshakeError
		if errors.As(err, &he) {
			return nil // answered
		}
		return wire.Errorf(wire.CodeInternal, "", "attach: %v", err)
	}
	conn.MaxMessage = attachMaxMessage
	t = attachTarget(t)
	a := &attachment{s: s, t: t, id: id, conn: conn, after: after, writePrefix: rand.Text()[:12] + "-",
		ws: r.PathValue("ws"), owner: rand.Text()}
	a.cond = sync.NewCond(&a.mu)
	a.run(context.WithoutCancel(r.Context()))
	return nil
}

// rawHijacker is w whose hijacked connection makes its small reads and
// writes by direct system calls (rawio.Wrap): a keystroke's read from the
// client and its echo's write, which otherwise, as the first system call
// after an idle spell, wake the runtime's monitor thread.
type rawHijacker struct{ http.ResponseWriter }

func (h rawHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	rc := rawio.Wrap(c)
	if rc == c || brw == nil {
		return rc, brw, nil
	}
	// The read buffer reads the connection itself: one that reads the
	// wrapper instead, holding the bytes it held.
	held, _ := brw.Reader.Peek(brw.Reader.Buffered())
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(held)), rc), brw.Reader.Size())
	_, _ = br.Peek(len(held))
	return rc, bufio.NewReadWriter(br, brw.Writer), nil
}

// Unwrap is the ResponseWriter (http.ResponseController).
func (h rawHijacker) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// attachTarget is t without the wrappers of one HTTP exchange: once
// upgraded there are no response headers to keep (and two goroutines
// call), and a request's Idempotency-Key must not make every stdin write
// one.
func attachTarget(t target) target {
	for {
		switch w := t.(type) {
		case routedTarget:
			t = w.target
		case keyedTarget:
			t = w.target
		default:
			return t
		}
	}
}

// attachment is one attach WebSocket: run's goroutine keeps an attach
// stream open (attachstream.go; or, with an agent without them, reads
// output), one reads the client's frames, one pings.
type attachment struct {
	s           *Server
	t           target
	id          string
	ws          string // the target's workspace
	owner       string // names this attachment's streams' subjects
	conn        *websocket.Conn
	writePrefix string       // of stdin write ids
	lastHeard   atomic.Int64 // Unix ns of the client's last frame

	outMu      sync.Mutex // sending output to the client; fields below
	after      uint64     // the cursor the client has
	exitSent   bool
	closedSeen bool
	batch      []websocket.Message // send's, reused
	seqBuf     []byte              // send's seq frame, reused

	writeMu sync.Mutex  // stdin, in order; and writes below
	writes  int         // stdin writes so far (their numbers)
	poll    atomic.Bool // the agent has no attach streams: proc.read/proc.write

	mu           sync.Mutex // stdin of streams; fields below
	cond         *sync.Cond // on mu: acknowledgements
	cur          *cpStream  // the open stream, nil between streams
	pending      []pendingWrite
	pendingBytes int
	acked        uint64 // every write up to it was acknowledged
}

func (a *attachment) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.lastHeard.Store(time.Now().UnixNano())
	a.conn.OnPong = func([]byte) { a.lastHeard.Store(time.Now().UnixNano()) }
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); defer cancel(); a.readClient(ctx) }()
	go func() { defer wg.Done(); a.keepalive(ctx) }()
	stop := context.AfterFunc(ctx, func() { a.mu.Lock(); a.cond.Broadcast(); a.mu.Unlock() })
	defer stop()
	code, reason, err := a.streamOutput(ctx)
	if errors.Is(err, errNoStreams) {
		a.pollStdin(ctx)
		code, reason = a.sendOutput(ctx)
	}
	_ = a.conn.CloseWith(code, reason, 0)
	cancel()
	wg.Wait()
}

// keepalive pings the client and drops it when it has been silent for
// attachIdle.
func (a *attachment) keepalive(ctx context.Context) {
	t := time.NewTicker(attachPing)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, a.lastHeard.Load())) > attachIdle {
			_ = a.conn.CloseWith(websocket.CloseGoingAway, "client silent", 0)
			return
		}
		_ = a.conn.Ping(nil)
	}
}

// sendOutput reads the process's events and sends them until closed, the
// client leaves (ctx) or an error retrying cannot fix; it returns the close
// status to send. While the agent cannot be reached it tells the client
// ("error" frames, retryable) and keeps trying.
func (a *attachment) sendOutput(ctx context.Context) (int, string) {
	// The first read's cursor is sent even with nothing new, and so is the
	// first after a failure: the client learns the agent answers.
	failing := true
	for ctx.Err() == nil {
		var res wire.ProcReadResult
		err := a.t.Call(ctx, wire.OpProcRead, &wire.ProcReadRequest{
			ID: a.id, After: a.after, MaxBytes: a.s.readCap(), WaitMs: attachWait.Milliseconds(),
		}, &res, rpc.CallOptions{Timeout: attachWait + attachMargin})
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			info := client.NewErrorBody(err).Error
			if a.sendControl(attachControl{Type: "error", Error: info}) != nil {
				break
			}
			if !info.Retryable && info.Code != wire.CodeDeadlineExceeded {
				return websocket.CloseInternalError, string(info.Code)
			}
			failing = true
			select {
			case <-ctx.Done():
			case <-time.After(attachRetry):
			}
			continue
		}
		if len(res.Chunks) > 0 {
			hoptrace.Mark(hoptrace.CPOutput)
		}
		a.outMu.Lock()
		err = a.send(&res, failing)
		a.outMu.Unlock()
		if err != nil {
			break
		}
		failing = false
		if res.ClosedSeq != 0 {
			return websocket.CloseNormal, "closed"
		}
	}
	return websocket.CloseGoingAway, ""
}

// send writes one read's events: output, a gap, exit, then the cursor;
// under outMu. They go as one batch: a keystroke's echo and its cursor
// reach the client in one write (one read, one wake-up there).
func (a *attachment) send(res *wire.ProcReadResult, recovered bool) error {
	msgs := a.batch[:0]
	defer func() { clear(msgs); a.batch = msgs[:0] }()
	control := func(c attachControl) error {
		b, err := json.Marshal(c)
		if err == nil {
			msgs = append(msgs, websocket.Message{Op: websocket.OpText, Data: b})
		}
		return err
	}
	if res.Dropped > 0 {
		if err := control(attachControl{Type: "dropped", Bytes: res.Dropped}); err != nil {
			return err
		}
	}
	for _, c := range res.Chunks {
		if c.Stream == wire.StreamStderr {
			if err := control(attachControl{Type: "output", Stream: c.Stream, Data: c.Data}); err != nil {
				return err
			}
		} else {
			msgs = append(msgs, websocket.Message{Op: websocket.OpBinary, Data: c.Data})
		}
	}
	if res.ExitSeq != 0 && !a.exitSent {
		a.exitSent = true
		code := res.ExitCode
		if err := control(attachControl{Type: "exit", ExitCode: &code, TimedOut: res.TimedOut}); err != nil {
			return err
		}
	}
	if res.NextSeq > a.after || recovered {
		a.after = res.NextSeq
		a.seqBuf = appendSeqFrame(a.seqBuf[:0], res.NextSeq)
		msgs = append(msgs, websocket.Message{Op: websocket.OpText, Data: a.seqBuf})
	}
	if len(msgs) == 0 {
		return nil
	}
	err := a.conn.WriteMessages(msgs...)
	if len(res.Chunks) > 0 {
		hoptrace.Mark(hoptrace.CPSent)
	}
	return err
}

// appendSeqFrame appends the "seq" control frame of seq, as json.Marshal
// writes attachControl{Type: "seq", Seq: seq}: the frame of every
// keystroke's echo, without reflection or allocation.
func appendSeqFrame(b []byte, seq uint64) []byte {
	if seq == 0 {
		return append(b, `{"type":"seq"}`...)
	}
	b = append(b, `{"type":"seq","seq":`...)
	return append(strconv.AppendUint(b, seq, 10), '}')
}

func (a *attachment) sendControl(c attachControl) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return a.conn.WriteMessage(websocket.OpText, b)
}

// readClient takes the client's frames until it leaves: stdin (binary),
// resize and signal (text). A failed call is reported as an "error" frame.
func (a *attachment) readClient(ctx context.Context) {
	for {
		op, p, err := a.conn.ReadMessage()
		if err != nil {
			return
		}
		a.lastHeard.Store(time.Now().UnixNano())
		if op == websocket.OpBinary {
			hoptrace.Mark(hoptrace.CPStdin)
			err = a.writeStdin(ctx, p, false)
		} else {
			err = a.control(ctx, p)
		}
		if err != nil && ctx.Err() == nil {
			info := client.NewErrorBody(err).Error
			_ = a.sendControl(attachControl{Type: "error", Error: info})
		}
	}
}

// writeStdin writes p (then EOF, with eof) to the process's stdin: on an
// attach stream, sent at once and acknowledged later; else by proc.write.
// Write n has the id writePrefix+n either way, so the agent writes it once.
func (a *attachment) writeStdin(ctx context.Context, p []byte, eof bool) error {
	if len(p) == 0 && !eof {
		return nil
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if !a.poll.Load() {
		for {
			n := min(len(p), wire.AttachWriteMax)
			a.streamStdin(ctx, p[:n], eof && n == len(p))
			if p = p[n:]; len(p) == 0 {
				return nil
			}
		}
	}
	a.writes++
	return a.procWrite(ctx, pendingWrite{n: uint64(a.writes), data: p, eof: eof})
}

func (a *attachment) procWrite(ctx context.Context, w pendingWrite) error {
	body := &wire.ProcWriteRequest{ID: a.id, WriteID: a.writePrefix + strconv.FormatUint(w.n, 10), Data: w.data, EOF: w.eof}
	return a.t.Call(ctx, wire.OpProcWrite, body, nil, rpc.CallOptions{Timeout: procCallTimeout})
}

// pollStdin switches stdin to proc.write (an agent without attach streams)
// and writes what was queued for a stream, in order.
func (a *attachment) pollStdin(ctx context.Context) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	a.poll.Store(true)
	a.mu.Lock()
	pend := a.pending
	a.pending, a.pendingBytes = nil, 0
	a.cond.Broadcast()
	a.mu.Unlock()
	for _, w := range pend {
		if err := a.procWrite(ctx, w); err != nil && ctx.Err() == nil {
			_ = a.sendControl(attachControl{Type: "error", Error: client.NewErrorBody(err).Error})
		}
	}
}

// control runs one JSON control frame of the client.
func (a *attachment) control(ctx context.Context, p []byte) error {
	var c attachControl
	if err := json.Unmarshal(p, &c); err != nil {
		return wire.Errorf(wire.CodeInvalidArgument, "", "control frame: %v", err)
	}
	opts := rpc.CallOptions{Timeout: procCallTimeout}
	if c.Type == "resize" || c.Type == "signal" {
		a.drainStdin(ctx) // as over ssh's channel: after the keys typed before
	}
	switch c.Type {
	case "resize":
		body := &wire.ProcResizeRequest{ID: a.id, Cols: c.Cols, Rows: c.Rows}
		if err := body.Validate(); err != nil {
			return err
		}
		return a.t.Call(ctx, wire.OpProcResize, body, nil, opts)
	case "signal":
		body := &wire.ProcSignalRequest{ID: a.id, Signal: c.Signal}
		if err := body.Validate(); err != nil {
			return err
		}
		return a.t.Call(ctx, wire.OpProcSignal, body, nil, opts)
	case "eof":
		return a.writeStdin(ctx, nil, true)
	}
	return wire.Errorf(wire.CodeInvalidArgument, "", "control frame type %q is not resize, signal or eof", c.Type)
}
