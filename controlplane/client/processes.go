package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/outposthq/outpost/wire"
)

// StartProcessRequest is the body of POST {target}/processes: Argv or
// Command, and optionally an ID (default: the agent picks one), Cwd, Env,
// TTY with Cols × Rows (default 80 × 24), Stdin (a pipe fed by WriteStdin;
// a TTY always has one), Detached (never wait for a reader), Hangup (SIGHUP
// once no client has been attached for the grace) and TimeoutMs (0: no
// timeout). It is the wire's type: the JSON body and the agent's request
// are one shape.
type StartProcessRequest = wire.ProcStartRequest

// ProcessStarted is the result of starting a process (the wire's type).
type ProcessStarted = wire.ProcStartResult

// Process describes one process (the wire's type). ExitCode is null while
// it runs; Closed says every stream ended too.
type Process = wire.ProcInfo

// ProcessList is the body of GET {target}/processes.
type ProcessList struct {
	Processes []Process `json:"processes"`
}

// ProcessChunk is one piece of output: Data is base64 in JSON. Dropped, on
// the first chunk after a gap in an events stream, counts the bytes lost
// in it.
type ProcessChunk struct {
	Seq     uint64 `json:"seq"`
	Stream  string `json:"stream"`
	Data    []byte `json:"data"`
	Dropped int64  `json:"dropped,omitempty"`
}

// ProcessOutput is the body of GET {target}/processes/{id}/output. NextSeq
// is the cursor for the next read; ExitCode is null until Exited.
type ProcessOutput struct {
	Chunks   []ProcessChunk `json:"chunks"`
	NextSeq  uint64         `json:"nextSeq"`
	Exited   bool           `json:"exited"`
	ExitCode *int           `json:"exitCode"`
	TimedOut bool           `json:"timedOut"`
	Closed   bool           `json:"closed"`
	Dropped  int64          `json:"dropped"`
}

// StdinRequest is the body of POST {target}/processes/{id}/stdin: Data
// (base64 in JSON) or Text, then EOF when set. A WriteID already accepted
// is acknowledged without writing again.
type StdinRequest struct {
	WriteID string `json:"writeId"`
	Data    []byte `json:"data,omitempty"`
	Text    string `json:"text,omitempty"`
	EOF     bool   `json:"eof,omitempty"`
}

// StdinResult is the result of a stdin write: status "accepted".
type StdinResult struct {
	Status string `json:"status"`
}

// SignalRequest is the body of POST {target}/processes/{id}/signal.
type SignalRequest struct {
	Signal string `json:"signal"`
}

// ResizeRequest is the body of POST {target}/processes/{id}/resize.
type ResizeRequest struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// TerminateResult is the result of DELETE {target}/processes/{id}.
type TerminateResult struct {
	WasRunning bool `json:"wasRunning"`
}

// ProcessExit is the data of the exit and closed events.
type ProcessExit struct {
	ExitCode int  `json:"exitCode"`
	TimedOut bool `json:"timedOut,omitempty"`
}

// Event kinds of an events stream.
const (
	EventOutput = "output"
	EventExit   = "exit"
	EventClosed = "closed"
	EventError  = "error"
)

// ProcessEvent is one event of GET {target}/processes/{id}/events: Seq is
// its id; Chunk is set for output, Exit for exit and closed, Err for an
// error that ended the stream.
type ProcessEvent struct {
	Seq   uint64
	Kind  string
	Chunk *ProcessChunk
	Exit  *ProcessExit
	Err   error
}

func (t *Target) procPath(id string) string {
	return t.prefix + "/processes/" + url.PathEscape(id)
}

// StartProcess calls POST {target}/processes.
func (t *Target) StartProcess(ctx context.Context, req StartProcessRequest) (*ProcessStarted, error) {
	var out ProcessStarted
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/processes", req, &out)
}

// ListProcesses calls GET {target}/processes.
func (t *Target) ListProcesses(ctx context.Context) ([]Process, error) {
	var out ProcessList
	if err := t.c.do(ctx, http.MethodGet, t.prefix+"/processes", nil, &out); err != nil {
		return nil, err
	}
	return out.Processes, nil
}

// GetProcess calls GET {target}/processes/{id}.
func (t *Target) GetProcess(ctx context.Context, id string) (*Process, error) {
	var out Process
	return &out, t.c.do(ctx, http.MethodGet, t.procPath(id), nil, &out)
}

// ReadOutput calls GET {target}/processes/{id}/output: the events after
// cursor after, at most maxBytes of output (0: the server's default),
// waiting up to wait for one.
func (t *Target) ReadOutput(ctx context.Context, id string, after uint64, maxBytes int, wait time.Duration) (*ProcessOutput, error) {
	q := url.Values{}
	q.Set("after", strconv.FormatUint(after, 10))
	if maxBytes > 0 {
		q.Set("maxBytes", strconv.Itoa(maxBytes))
	}
	if wait > 0 {
		q.Set("waitMs", strconv.FormatInt(wait.Milliseconds(), 10))
	}
	var out ProcessOutput
	return &out, t.c.do(ctx, http.MethodGet, t.procPath(id)+"/output?"+q.Encode(), nil, &out)
}

// WriteStdin calls POST {target}/processes/{id}/stdin.
func (t *Target) WriteStdin(ctx context.Context, id string, req StdinRequest) error {
	return t.c.do(ctx, http.MethodPost, t.procPath(id)+"/stdin", req, nil)
}

// Signal calls POST {target}/processes/{id}/signal.
func (t *Target) Signal(ctx context.Context, id, signal string) error {
	return t.c.do(ctx, http.MethodPost, t.procPath(id)+"/signal", SignalRequest{Signal: signal}, nil)
}

// Resize calls POST {target}/processes/{id}/resize.
func (t *Target) Resize(ctx context.Context, id string, cols, rows int) error {
	return t.c.do(ctx, http.MethodPost, t.procPath(id)+"/resize", ResizeRequest{Cols: cols, Rows: rows}, nil)
}

// Terminate calls DELETE {target}/processes/{id}.
func (t *Target) Terminate(ctx context.Context, id string) (bool, error) {
	var out TerminateResult
	err := t.c.do(ctx, http.MethodDelete, t.procPath(id), nil, &out)
	return out.WasRunning, err
}

// Events calls GET {target}/processes/{id}/events with Last-Event-ID after
// and calls f for every event until closed (then it returns nil), f
// returns an error, ctx ends or the stream breaks; the error says which.
// Resume with the Seq of the last event f saw.
func (t *Target) Events(ctx context.Context, id string, after uint64, f func(ProcessEvent) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.c.BaseURL+t.procPath(id)+"/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatUint(after, 10))
	resp, err := t.c.send(ctx, req)
	if err != nil {
		return fmt.Errorf("events of %s: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return decodeError(resp)
	}
	return readEvents(resp.Body, f)
}

// errStreamEnded is returned when an events stream ends before closed.
var errStreamEnded = errors.New("events stream ended before closed")

// readEvents parses a text/event-stream body.
func readEvents(r io.Reader, f func(ProcessEvent) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var ev ProcessEvent
	var data []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			var rest []byte
			rest, err = br.ReadBytes('\n')
			line = append(append([]byte(nil), line...), rest...)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errStreamEnded
			}
			return fmt.Errorf("events: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if ev.Kind == "" && data == nil {
				continue
			}
			done, err := dispatchEvent(&ev, data, f)
			if err != nil || done {
				return err
			}
			ev, data = ProcessEvent{}, nil
		case line[0] == ':':
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "id":
				ev.Seq, _ = strconv.ParseUint(string(value), 10, 64)
			case "event":
				ev.Kind = string(value)
			case "data":
				// An output event's one data line is decoded where it
				// lies, saving a copy of the bulk of the stream.
				if ev.Kind == EventOutput && data == nil && ev.Chunk == nil {
					if c, ok := parseOutput(value); ok {
						ev.Chunk = &c
						continue
					}
				}
				if ev.Chunk != nil {
					if len(value) == 0 {
						continue // joins as a trailing newline: still the same JSON
					}
					return fmt.Errorf("events: output %d has more than one JSON value", ev.Seq)
				}
				if data != nil {
					data = append(data, '\n') // data lines join with newlines
				}
				data = append(data, value...)
			}
		}
	}
}

// dispatchEvent decodes one event and hands it to f; done after closed.
func dispatchEvent(ev *ProcessEvent, data []byte, f func(ProcessEvent) error) (done bool, err error) {
	if ev.Kind == "" {
		ev.Kind = "message"
	}
	switch ev.Kind {
	case EventOutput:
		if ev.Chunk != nil {
			break // decoded as it was read
		}
		c, ok := parseOutput(data)
		if !ok {
			if err := json.Unmarshal(data, &c); err != nil {
				return false, fmt.Errorf("events: output %d: %w", ev.Seq, err)
			}
		}
		ev.Chunk = &c
	case EventExit, EventClosed:
		ev.Exit = &ProcessExit{}
		if err := json.Unmarshal(data, ev.Exit); err != nil {
			return false, fmt.Errorf("events: %s: %w", ev.Kind, err)
		}
	case EventError:
		if err := eventError(data); err != nil {
			return true, err
		}
		return true, fmt.Errorf("events: error: %s", strings.TrimSpace(string(data)))
	}
	if err := f(*ev); err != nil {
		return true, err
	}
	return ev.Kind == EventClosed, nil
}

// eventError decodes an error event's data: {"code","reason","message",
// "retryable"}, or the same wrapped as {"error":{...}} (older servers); nil
// when it is neither.
func eventError(data []byte) *wire.Error {
	var eb struct {
		ErrorDetail
		Error *ErrorDetail `json:"error"`
	}
	if json.Unmarshal(data, &eb) != nil {
		return nil
	}
	switch {
	case eb.Error != nil && eb.Error.Code != "":
		return eb.Error.Err()
	case eb.Code != "":
		return eb.ErrorDetail.Err()
	}
	return nil
}

// IsStreamEnded reports whether err means the events stream broke off
// before closed, so that resuming it makes sense.
func IsStreamEnded(err error) bool { return errors.Is(err, errStreamEnded) }

// parseOutput decodes an output event's data as the control plane renders
// it, {"seq":N,"stream":"S","data":"BASE64"} with an optional "dropped":N
// last, without encoding/json (which is several times slower on large
// base64 strings). ok is false for anything else; the caller then uses
// encoding/json.
func parseOutput(data []byte) (c ProcessChunk, ok bool) {
	rest, ok := bytes.CutPrefix(data, []byte(`{"seq":`))
	if !ok {
		return c, false
	}
	if c.Seq, rest, ok = cutUint(rest); !ok {
		return c, false
	}
	var stream, b64 []byte
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"stream":"`)); !ok {
		return c, false
	}
	if stream, rest, ok = bytes.Cut(rest, []byte(`"`)); !ok || bytes.IndexByte(stream, '\\') >= 0 {
		return c, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"data":"`)); !ok {
		return c, false
	}
	if b64, rest, ok = bytes.Cut(rest, []byte(`"`)); !ok {
		return c, false
	}
	if after, found := bytes.CutPrefix(rest, []byte(`,"dropped":`)); found {
		var n uint64
		if n, rest, ok = cutUint(after); !ok || n > 1<<62 {
			return c, false
		}
		c.Dropped = int64(n)
	}
	if string(rest) != "}" {
		return c, false
	}
	c.Data = make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(c.Data, b64)
	if err != nil {
		return c, false
	}
	c.Data, c.Stream = c.Data[:n], string(stream)
	return c, true
}

// cutUint splits a leading decimal number off b.
func cutUint(b []byte) (uint64, []byte, bool) {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	n, err := strconv.ParseUint(string(b[:i]), 10, 64)
	return n, b[i:], err == nil
}
