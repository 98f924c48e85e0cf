package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/rawio"
	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/wire"
	"golang.org/x/term"
)

// Keepalive of the attach WebSocket, as ssh's ServerAlive* would be: a
// ping every attachPingEvery; the connection counts as lost when the
// server has been silent for lostAfter, or when the agent has been
// unreachable (the server says so) for lostAfter, or when reconnecting has
// failed for that long.
const (
	attachPingEvery = 3 * time.Second
	lostAfter       = 10 * time.Second
	attachRedial    = 500 * time.Millisecond
)

// endReason is why one WebSocket of an attachment ended.
type endReason int

const (
	endBroken     endReason = iota // the socket broke: reconnect
	endClosed                      // the process closed: done
	endLost                        // the agent or server silent for lostAfter
	endDisconnect                  // ~. typed
	endLocal                       // a second INT/TERM, or HUP, to the CLI
	endFatal                       // an error retrying cannot fix
)

// attachment is the client side of one attach of a process: output to
// stdout/stderr, local stdin to the process, local terminal size and
// signals, reconnecting by seq when the socket breaks.
type attachment struct {
	t      *client.Target
	id     string
	name   string // the command, for messages
	tty    bool   // local terminal in raw mode: escapes, resize
	stdin  io.Reader
	eof    bool // send eof when stdin ends
	fd     int  // the local terminal, when tty
	stdout io.Writer
	stderr io.Writer
	hc     *http.Client // dial's: the client's, its connections' small reads and writes direct (rawHTTPClient)

	seq      atomic.Uint64
	conn     atomic.Pointer[websocket.Conn]
	trouble  atomic.Int64 // Unix ns since when the agent is unreachable, 0: fine
	heard    atomic.Int64 // Unix ns of the server's last frame
	end      chan endReason
	mu       sync.Mutex
	exitCode *int
	timedOut bool
	fatal    error
	signals  int // INT/TERM received
}

// run attaches until the process closes (its exit code), the user
// disconnects or the connection is lost (exitError 255 with a message).
func (a *attachment) run(ctx context.Context, after uint64) error {
	a.seq.Store(after)
	a.end = make(chan endReason, 4)
	if a.tty {
		old, err := term.MakeRaw(a.fd)
		if err != nil {
			return fmt.Errorf("raw terminal: %w", err)
		}
		defer func() { _ = term.Restore(a.fd, old) }()
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	winch := make(chan os.Signal, 1)
	notifyResize(winch)
	defer signal.Stop(winch)
	a.stdin, a.stdout = terminalIO(a.stdin, a.stdout)
	if a.stdin != nil {
		go a.pumpStdin() // waiting for input, it ends with the CLI
	}
	brokenSince := time.Time{}
	for first := true; ; first = false {
		c, err := a.dial(ctx)
		if err != nil {
			var we *wire.Error
			if first || errors.As(err, &we) && !we.Retryable {
				return err
			}
			if brokenSince.IsZero() {
				brokenSince = time.Now()
			}
			if time.Since(brokenSince) > lostAfter {
				return a.say("connection to agent lost")
			}
			time.Sleep(attachRedial)
			continue
		}
		brokenSince = time.Time{}
		reason := a.serve(c, sigs, winch)
		a.conn.Store(nil)
		_ = c.Close()
		switch reason {
		case endClosed:
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.timedOut {
				fmt.Fprintf(a.stderr, "outpost %s: timed out\n", a.name)
			}
			if a.exitCode != nil && *a.exitCode != 0 {
				return exitError(*a.exitCode)
			}
			return nil
		case endLost:
			return a.say("connection to agent lost")
		case endDisconnect:
			return a.say(fmt.Sprintf("disconnected; the process goes on (outpost attach %s)", a.id))
		case endLocal:
			return a.say(fmt.Sprintf("interrupted; the process goes on until hung up (outpost attach %s)", a.id))
		case endFatal:
			return a.fatal
		}
		brokenSince = time.Now()
	}
}

// say prints msg on its own line and makes the exit status 255.
func (a *attachment) say(msg string) error {
	nl := "\n"
	if a.tty {
		nl = "\r\n"
	}
	fmt.Fprintf(a.stderr, "%soutpost: %s%s", nl, msg, nl)
	return exitError(255)
}

// dial opens the WebSocket after the last seq received.
func (a *attachment) dial(ctx context.Context) (*websocket.Conn, error) {
	cl := a.t.Client()
	if a.hc == nil {
		a.hc = rawHTTPClient(cl.HTTPClient())
	}
	dctx, cancel := context.WithTimeout(ctx, lostAfter)
	defer cancel()
	c, resp, err := websocket.Dial(dctx, a.hc, a.t.AttachURL(a.id, a.seq.Load()), cl.AuthHeader())
	if errors.Is(err, websocket.ErrNotUpgraded) {
		defer resp.Body.Close()
		var body client.ErrorBody
		if json.NewDecoder(resp.Body).Decode(&body) == nil && body.Error != nil {
			return nil, body.Error.Err()
		}
		return nil, wire.Errorf(wire.CodeUnavailable, "", "attach: %s", resp.Status)
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "", "attach: %v", err)
	}
	return c, nil
}

// rawHTTPClient is hc whose connections make their small reads and
// writes by direct system calls (rawio.Conn): a keystroke's write to the
// socket and the echo's read from it then do not wake the runtime's
// monitor thread, as the first system call after an idle spell does. hc
// itself when its transport is not an *http.Transport.
func rawHTTPClient(hc *http.Client) *http.Client {
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	tr, ok := rt.(*http.Transport)
	if !ok {
		return hc
	}
	tr = tr.Clone()
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return rawio.Conn(c), nil
	}
	c := *hc
	c.Transport = tr
	return &c
}

// serve runs one socket until it ends, and says why.
func (a *attachment) serve(c *websocket.Conn, sigs, winch <-chan os.Signal) endReason {
	a.heard.Store(time.Now().UnixNano())
	c.OnPong = func([]byte) { a.heard.Store(time.Now().UnixNano()) }
	a.conn.Store(c)
	if a.tty {
		a.sendSize(c)
	}
	done := make(chan struct{})
	defer close(done)
	readEnd := make(chan endReason, 1)
	go func() { readEnd <- a.read(c) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastPing := time.Now()
	for {
		select {
		case r := <-readEnd:
			return r
		case r := <-a.end:
			return r
		case <-winch:
			a.sendSize(c)
		case sig := <-sigs:
			if r, stop := a.localSignal(c, sig); stop {
				return r
			}
		case now := <-tick.C:
			if t := a.trouble.Load(); t != 0 && now.Sub(time.Unix(0, t)) > lostAfter {
				return endLost
			}
			if now.Sub(time.Unix(0, a.heard.Load())) > lostAfter {
				return endLost
			}
			if now.Sub(lastPing) >= attachPingEvery {
				lastPing = now
				_ = c.Ping(nil)
			}
		}
	}
}

// localSignal handles a signal to the CLI: HUP (its terminal went away)
// ends it; the first INT or TERM goes to the remote process, a second
// ends the CLI.
func (a *attachment) localSignal(c *websocket.Conn, sig os.Signal) (endReason, bool) {
	if sig == syscall.SIGHUP {
		return endLocal, true
	}
	a.signals++
	if a.signals > 1 {
		return endLocal, true
	}
	name := "TERM"
	if sig == os.Interrupt {
		name = "INT"
	}
	_ = sendControl(c, map[string]any{"type": "signal", "signal": name})
	return 0, false
}

func (a *attachment) sendSize(c *websocket.Conn) {
	if w, h, err := term.GetSize(a.fd); err == nil && w > 0 && h > 0 {
		_ = sendControl(c, map[string]any{"type": "resize", "cols": w, "rows": h})
	}
}

func sendControl(c *websocket.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.WriteMessage(websocket.OpText, b)
}

// serverControl is a control frame of the server (API.md "Attach").
type serverControl struct {
	Type     string              `json:"type"`
	ExitCode *int                `json:"exitCode"`
	TimedOut bool                `json:"timedOut"`
	Seq      uint64              `json:"seq"`
	Data     []byte              `json:"data"`
	Bytes    int64               `json:"bytes"`
	Error    *client.ErrorDetail `json:"error"`
}

// read takes the server's frames until the socket ends.
func (a *attachment) read(c *websocket.Conn) endReason {
	buf := make([]byte, 0, 32<<10) // each message is done with before the next is read
	for {
		op, p, err := c.ReadMessageInto(buf)
		var ce *websocket.CloseError
		switch {
		case errors.As(err, &ce) && ce.Code == websocket.CloseNormal:
			return endClosed
		case errors.As(err, &ce) && ce.Code == websocket.CloseInternalError:
			a.mu.Lock()
			if a.fatal == nil {
				a.fatal = fmt.Errorf("the server ended the attach: %s", ce.Reason)
			}
			a.mu.Unlock()
			return endFatal
		case err != nil:
			return endBroken
		}
		if cap(p) > cap(buf) && cap(p) <= 1<<20 {
			buf = p[:0] // a larger message: its buffer is kept for the next (up to 1 MiB)
		}
		a.heard.Store(time.Now().UnixNano())
		if op == websocket.OpBinary {
			if _, err := a.stdout.Write(p); err != nil {
				return endLocal
			}
			continue
		}
		if seq, ok := seqFrame(p); ok { // every echo's: no reflection
			a.seq.Store(seq)
			a.trouble.Store(0)
			continue
		}
		var m serverControl
		if json.Unmarshal(p, &m) != nil {
			continue
		}
		switch m.Type {
		case "output":
			_, _ = a.stderr.Write(m.Data)
		case "seq":
			a.seq.Store(m.Seq)
			a.trouble.Store(0)
		case "exit":
			a.mu.Lock()
			a.exitCode, a.timedOut = m.ExitCode, m.TimedOut
			a.mu.Unlock()
		case "dropped":
			fmt.Fprintf(a.stderr, "[outpost: %d bytes of output were dropped]\n", m.Bytes)
		case "error":
			if m.Error == nil {
				continue
			}
			if m.Error.Retryable || m.Error.Code == wire.CodeDeadlineExceeded {
				a.trouble.CompareAndSwap(0, time.Now().UnixNano())
				continue
			}
			// The server closes with 1011 after an error that ends the
			// attach; others (stdin refused, say) are told and go on.
			var err error = m.Error.Err()
			if m.Error.Code == wire.CodeNotFound {
				err = fmt.Errorf("agent restarted; the process was lost (%v)", err)
			}
			a.mu.Lock()
			a.fatal = err
			a.mu.Unlock()
			if m.Error.Code != wire.CodeNotFound {
				nl := "\n"
				if a.tty {
					nl = "\r\n"
				}
				fmt.Fprintf(a.stderr, "outpost %s: %v%s", a.name, err, nl)
			}
		}
	}
}

// seqFrame reads p when it is a "seq" frame as the control plane writes
// it, {"type":"seq","seq":N} (or {"type":"seq"} for 0); any other
// frame, or spelling, is not (ok false) and goes to encoding/json.
func seqFrame(p []byte) (seq uint64, ok bool) {
	const head, zero = `{"type":"seq","seq":`, `{"type":"seq"}`
	if string(p) == zero {
		return 0, true
	}
	if len(p) < len(head)+2 || string(p[:len(head)]) != head || p[len(p)-1] != '}' {
		return 0, false
	}
	digits := p[len(head) : len(p)-1]
	if len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(digits), 10, 64)
	return n, err == nil
}

// pumpStdin sends local input to the process: in a terminal, after the
// escape filter; at the end, EOF when asked.
func (a *attachment) pumpStdin() {
	var esc escapes
	buf := make([]byte, 32<<10)
	var filtered []byte // the escape filter's output, reused (sent before the next read)
	for {
		n, err := a.stdin.Read(buf)
		data := buf[:n]
		if a.tty && n > 0 {
			var act escapeAction
			data, act = esc.filter(filtered, data)
			filtered = data
			switch act {
			case escapeHelp:
				_, _ = io.WriteString(a.stderr, escapeHelpText)
			case escapeDisconnect:
				a.send(data)
				a.end <- endDisconnect
				return
			}
		}
		a.send(data)
		if err != nil {
			if a.eof {
				a.sendEOF()
			}
			return
		}
	}
}

// send writes input to the current socket, waiting a while for one when
// reconnecting; input typed while there is none for lostAfter is lost
// with the connection.
func (a *attachment) send(p []byte) {
	if len(p) == 0 {
		return
	}
	for deadline := time.Now().Add(lostAfter); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c := a.conn.Load(); c != nil && c.WriteMessage(websocket.OpBinary, p) == nil {
			return
		}
	}
}

func (a *attachment) sendEOF() {
	for deadline := time.Now().Add(lostAfter); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c := a.conn.Load(); c != nil && sendControl(c, map[string]string{"type": "eof"}) == nil {
			return
		}
	}
}
