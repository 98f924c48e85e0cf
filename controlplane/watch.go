package controlplane

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// watchPollWait is how long one poll of a watch waits for an event; an
// empty poll writes a keepalive comment.
const watchPollWait = 15 * time.Second

// routeWatch mounts GET {target}/fs/watch.
func (s *Server) routeWatch(mux *http.ServeMux) {
	s.handleTarget(mux, "GET", "/fs/watch", s.handleWatch)
}

// handleWatch serves GET {target}/fs/watch?path=&recursive= as
// Server-Sent Events: each change is `id: <seq>` and `data:
// {"path","op"}`. Last-Event-ID (or ?after=) resumes: the agent keeps a
// watch's last 4096 events for 30 s after its last reader, so a client
// back within that gets every event once; one outside it gets an `event:
// reset` first (events were lost), then what is retained. `event: reset`
// also says the kernel dropped events (overflow). The client leaving
// ends the polls; the agent's watch ends 30 s later.
func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request, t target) error {
	q := r.URL.Query()
	rec, err := boolParam(q, "recursive", false)
	if err != nil {
		return err
	}
	after, err := queryUint(q.Get("after"), "after")
	if err != nil {
		return err
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if after, err = queryUint(v, "Last-Event-ID"); err != nil {
			return err
		}
	}
	var start wire.FsWatchStartResult
	if err := t.Call(r.Context(), wire.OpFsWatchStart, &wire.FsWatchStartRequest{Path: q.Get("path"), Recursive: rec}, &start, fileCall()); err != nil {
		return err
	}
	if after == 0 {
		after = start.Next - 1
	}
	flusher, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(w)
	flush := func() error {
		if err := bw.Flush(); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	fmt.Fprint(bw, ": watching\n\n")
	if flush() != nil {
		return nil
	}
	for {
		var res wire.FsWatchPollResult
		req := &wire.FsWatchPollRequest{Handle: start.Handle, After: after, WaitMs: int(watchPollWait / time.Millisecond)}
		if err := t.Concurrent().Call(r.Context(), wire.OpFsWatchPoll, req, &res, fileCall()); err != nil {
			if r.Context().Err() == nil {
				b, _ := json.Marshal(client.NewErrorBody(wire.AsError(err)))
				fmt.Fprintf(bw, "event: error\ndata: %s\n\n", b)
				flush()
			}
			return nil
		}
		if res.Reset {
			fmt.Fprint(bw, "event: reset\ndata: {}\n\n")
		}
		for _, e := range res.Events {
			if e.Op == "overflow" {
				fmt.Fprintf(bw, "id: %d\nevent: reset\ndata: {}\n\n", e.Seq)
			} else {
				b, _ := json.Marshal(client.WatchEvent{Path: e.Path, Op: e.Op})
				fmt.Fprintf(bw, "id: %d\ndata: %s\n\n", e.Seq, b)
			}
			after = e.Seq
		}
		if len(res.Events) == 0 && !res.Reset {
			fmt.Fprint(bw, ": keepalive\n\n")
		}
		if flush() != nil {
			return nil
		}
	}
}
