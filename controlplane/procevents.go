package controlplane

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// Events stream tuning.
const (
	// eventsWait is each long-poll read's wait; an empty one becomes a
	// keepalive comment, so a dead client is noticed.
	eventsWait = 20 * time.Second
	// eventsBuffered is how many read results wait for the HTTP writer:
	// one read is always in flight while the previous one is written, so
	// the agent, NATS and the client's connection all stay busy.
	eventsBuffered = 1
)

// eventsKeepalive is the longest silence on an events stream: a comment
// line (": keepalive") then keeps proxies from closing an idle stream and
// tells a dead client. A variable so that tests can shorten it.
var eventsKeepalive = 15 * time.Second

// readOutcome is one read of the events stream's fetcher.
type readOutcome struct {
	res *wire.ProcReadResult
	err error
}

// handleProcessEvents serves GET {target}/processes/{id}/events: every event
// after ?after= (or Last-Event-ID) as Server-Sent Events, until closed.
//
// One goroutine fetches, the handler writes. Reads are long-polls of up to
// readCap bytes; the fetcher asks for the next as soon as one returns, and
// waits while eventsBuffered results are unwritten, so a slow client slows
// the reads, which slows the process (the agent's flow control).
func (s *Server) handleProcessEvents(w http.ResponseWriter, r *http.Request, t target) error {
	id, err := procID(r)
	if err != nil {
		return err
	}
	after, err := queryUint(r.URL.Query().Get("after"), "after")
	if err != nil {
		return err
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if after, err = queryUint(v, "Last-Event-ID"); err != nil {
			return err
		}
	}
	// The first read answers at once, so a bad id or an offline agent is
	// a real status, not an event.
	first, err := s.readProc(r, t, &wire.ProcReadRequest{ID: id, After: after})
	if err != nil {
		return err
	}
	flusher, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	results := make(chan readOutcome, eventsBuffered)
	fetched := make(chan struct{})
	if first.ClosedSeq == 0 {
		go func() {
			defer close(fetched)
			s.fetchEvents(ctx, r, t, id, first.NextSeq, results)
		}()
	} else {
		close(fetched)
	}
	defer func() { cancel(); <-fetched }()

	sw := &sseWriter{flusher: flusher, last: after}
	var out io.Writer = w
	if g, ok := r.Context().Value(gatherKey{}).(*gatherConn); ok && r.ProtoMajor == 1 {
		// Under TLS, each of the buffer's writes and each flush go out
		// in a few large writes, not one per 16 KiB record.
		out, sw.g = gatheredWriter{w: w, g: g}, g
	}
	sw.bw = bufio.NewWriterSize(out, 256<<10)
	keepalive := time.NewTimer(eventsKeepalive)
	defer keepalive.Stop()
	for res := first; ; {
		if sw.write(res) != nil || res.ClosedSeq != 0 {
			return nil // the client left, or the stream is complete
		}
		var err error
		if res, err = sw.next(ctx, results, keepalive); err != nil {
			sw.writeError(err)
			return nil
		}
		if res == nil {
			return nil // the client left
		}
	}
}

// fetchEvents reads from cursor after until closed, ctx ends or a read
// fails: the stream then ends with that error (an agent that cannot be
// reached is 503 unavailable, and the client resumes with Last-Event-ID
// when it is back), rather than fall silent while it is gone.
func (s *Server) fetchEvents(ctx context.Context, r *http.Request, t target, id string, after uint64, out chan<- readOutcome) {
	r = r.WithContext(ctx)
	for ctx.Err() == nil {
		res, err := s.readProc(r, t, &wire.ProcReadRequest{ID: id, After: after, WaitMs: eventsWait.Milliseconds()})
		select {
		case out <- readOutcome{res: res, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil || res.ClosedSeq != 0 {
			return
		}
		after = res.NextSeq
	}
}

// sseWriter renders read results as events: output chunks, exit and
// closed in sequence order, each once (last is the highest seq written).
type sseWriter struct {
	bw      *bufio.Writer
	flusher http.Flusher
	g       *gatherConn // the connection's, under TLS
	last    uint64
	b64     []byte
}

// write writes every event of res after last, then flushes; an empty
// result is a keepalive comment.
func (w *sseWriter) write(res *wire.ProcReadResult) error {
	exitDone := res.ExitSeq == 0 || res.ExitSeq <= w.last
	dropped := res.Dropped
	for _, c := range res.Chunks {
		if !exitDone && res.ExitSeq < c.Seq {
			w.exit(res, client.EventExit, res.ExitSeq)
			exitDone = true
		}
		if c.Seq <= w.last {
			continue
		}
		w.output(&c, dropped)
		dropped = 0
	}
	if !exitDone {
		w.exit(res, client.EventExit, res.ExitSeq)
	}
	if res.ClosedSeq != 0 && res.ClosedSeq > w.last {
		w.exit(res, client.EventClosed, res.ClosedSeq)
	}
	if len(res.Chunks) == 0 && res.ClosedSeq == 0 {
		w.bw.WriteString(": keepalive\n\n")
	}
	return w.flush()
}

// next waits for the fetcher's next read, writing a keepalive comment
// whenever the stream has been silent for eventsKeepalive. It returns the
// read's error, or nil and nil when the client left.
func (w *sseWriter) next(ctx context.Context, results <-chan readOutcome, keepalive *time.Timer) (*wire.ProcReadResult, error) {
	keepalive.Reset(eventsKeepalive)
	for {
		select {
		case out := <-results:
			return out.res, out.err
		case <-keepalive.C:
			w.bw.WriteString(": keepalive\n\n")
			if w.flush() != nil {
				return nil, nil
			}
			keepalive.Reset(eventsKeepalive)
		case <-ctx.Done():
			return nil, nil
		}
	}
}

// output writes one output event; its data is the chunk's JSON, written
// here rather than by encoding/json to keep bulk output cheap.
func (w *sseWriter) output(c *wire.ProcChunk, dropped int64) {
	n := base64.StdEncoding.EncodedLen(len(c.Data))
	if cap(w.b64) < n {
		w.b64 = make([]byte, n)
	}
	w.b64 = w.b64[:n]
	base64.StdEncoding.Encode(w.b64, c.Data)
	seq := strconv.FormatUint(c.Seq, 10)
	w.bw.WriteString("id: " + seq + "\nevent: output\ndata: {\"seq\":" + seq + ",\"stream\":")
	stream, _ := json.Marshal(c.Stream)
	w.bw.Write(stream)
	w.bw.WriteString(",\"data\":\"")
	w.bw.Write(w.b64)
	w.bw.WriteString("\"")
	if dropped > 0 {
		w.bw.WriteString(",\"dropped\":" + strconv.FormatInt(dropped, 10))
	}
	w.bw.WriteString("}\n\n")
	w.last = c.Seq
}

// exit writes an exit or closed event.
func (w *sseWriter) exit(res *wire.ProcReadResult, kind string, seq uint64) {
	data, _ := json.Marshal(client.ProcessExit{ExitCode: res.ExitCode, TimedOut: res.TimedOut})
	w.bw.WriteString("id: " + strconv.FormatUint(seq, 10) + "\nevent: " + kind + "\ndata: ")
	w.bw.Write(data)
	w.bw.WriteString("\n\n")
	w.last = seq
}

// writeError ends the stream with an error event (no id: it is not one of
// the process's events) whose data is the error's
// {"code","reason","message","retryable"}.
func (w *sseWriter) writeError(err error) {
	data, _ := json.Marshal(client.NewErrorBody(err).Error)
	w.bw.WriteString("event: error\ndata: ")
	w.bw.Write(data)
	w.bw.WriteString("\n\n")
	_ = w.flush()
}

// flush writes out what is buffered, as one gathered write under TLS.
func (w *sseWriter) flush() error {
	var done func() error
	if w.g != nil {
		done = w.g.Gather()
	}
	err := w.bw.Flush()
	if err == nil && w.flusher != nil {
		w.flusher.Flush()
	}
	if done != nil {
		if derr := done(); err == nil {
			err = derr
		}
	}
	return err
}
